import { isIP } from 'node:net';
import { z } from 'zod';
import { parseApiKeys } from './http/api-keys';
import {
  parseStandardPublicKey,
  parseStandardSecret,
  STANDARD_DEFAULT_TOLERANCE_SECONDS,
} from './http/providers/standard-signature';
import { STRIPE_DEFAULT_TOLERANCE_SECONDS } from './http/providers/stripe-signature';
import { parseEncryptionKeys } from './temporal/codec';
import {
  loadTemporalConnection,
  type TemporalConnectionSettings,
  TemporalSettingsError,
} from './temporal/connection';

/**
 * The only reader of process.env. Every setting has a default that works on a laptop; the
 * production-only rules at the bottom refuse configurations that would quietly lose or fake work
 * (the seed's `QUEUE_CONNECTION=sync` in production).
 */

const DEV_WEBHOOK_SECRET = 'dev-webhook-secret';
/**
 * Public development secrets of the Stripe and Standard Webhooks endpoints, so `npm start` serves
 * them and `npm run demo -- --provider …` can sign for them; production refuses both.
 */
export const DEV_STRIPE_WEBHOOK_SECRET = 'whsec_dev_stripe_webhook_secret';
export const DEV_STANDARD_WEBHOOK_SECRET = `whsec_${Buffer.from('dev-standard-webhooks-secret').toString('base64')}`;
/** The currency of order totals unless SHOP_CURRENCY says otherwise (the demo's orders are yen). */
export const DEFAULT_SHOP_CURRENCY = 'jpy';

/** Where the HTTP process serves /metrics and /readyz unless ADMIN_ADDRESS says otherwise. */
export const DEFAULT_ADMIN_ADDRESS = '127.0.0.1:9465';

/**
 * Defaults of the webhook's hardening settings, exported so `buildApp` falls back to the same
 * values when a caller (a test, a script) passes only the settings it cares about.
 */
export const WEBHOOK_SECURITY_DEFAULTS = Object.freeze({
  WEBHOOK_SIGNATURE_SCHEME: 'plain',
  WEBHOOK_TOLERANCE_SECONDS: 300,
  WEBHOOK_AUTH_FAILURE_LIMIT: 20,
  WEBHOOK_AUTH_FAILURE_WINDOW_SECONDS: 60,
  WEBHOOK_AUTH_FAILURE_MAX_CLIENTS: 10_000,
} as const);

const port = (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback);
/** Unset and empty both mean "not configured" (an empty line in a .env file is common). */
const blankToUndefined = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));
const optionalUrl = blankToUndefined.pipe(z.url().optional());

const schema = z
  .object({
    NODE_ENV: z.enum(['development', 'test', 'production']).default('development'),
    LOG_LEVEL: z
      .enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'])
      .default('info'),
    HOST: z.string().default('127.0.0.1'),
    PORT: port(3000),
    DATABASE_URL: z
      .string()
      .default('sqlite:./data/app.db')
      .refine((v) => /^(sqlite:|postgres:\/\/|postgresql:\/\/)/.test(v), {
        message: 'must start with sqlite: (e.g. sqlite:./data/app.db) or postgres://',
      }),
    TEMPORAL_ADDRESS: optionalUrlLikeAddress(),
    TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
    /** gRPC port of the embedded dev server (`npm start` without TEMPORAL_ADDRESS). */
    TEMPORAL_DEV_PORT: port(7233),
    TEMPORAL_UI_PORT: port(8233),
    TEMPORAL_DEV_DB: z.string().default('./data/temporal.db'),
    /** Deadline for starting a workflow from the webhook; past it the provider gets a 503 and retries. */
    TEMPORAL_START_TIMEOUT_MS: z.coerce.number().int().min(100).max(60_000).default(5_000),
    PAYMENT_WEBHOOK_SECRET: z.string().min(1).default(DEV_WEBHOOK_SECRET),
    WEBHOOK_BODY_LIMIT_BYTES: z.coerce
      .number()
      .int()
      .min(256)
      .max(10 * 1024 * 1024)
      .default(64 * 1024),
    /** The secret being rotated out: accepted alongside the current one until the provider has switched. */
    PAYMENT_WEBHOOK_SECRET_PREVIOUS: blankToUndefined,
    /** `plain`: HMAC of the raw body (the contract). `timestamped`: HMAC of `<timestamp>.<raw body>`. */
    WEBHOOK_SIGNATURE_SCHEME: z
      .enum(['plain', 'timestamped'], {
        message: 'must be plain (HMAC of the raw body) or timestamped (HMAC of <timestamp>.<body>)',
      })
      .default(WEBHOOK_SECURITY_DEFAULTS.WEBHOOK_SIGNATURE_SCHEME),
    /** How far X-Payment-Timestamp may be from our clock (either way) under the timestamped scheme. */
    WEBHOOK_TOLERANCE_SECONDS: z.coerce
      .number()
      .int()
      .min(1)
      .max(
        3600,
        'must be at most 3600: a wider window lets a leaked request be replayed for longer',
      )
      .default(WEBHOOK_SECURITY_DEFAULTS.WEBHOOK_TOLERANCE_SECONDS),
    /** Failed signature checks allowed per client IP and window before 429; 0 turns the limit off. */
    WEBHOOK_AUTH_FAILURE_LIMIT: z.coerce
      .number()
      .int()
      .min(0)
      .max(100_000)
      .default(WEBHOOK_SECURITY_DEFAULTS.WEBHOOK_AUTH_FAILURE_LIMIT),
    WEBHOOK_AUTH_FAILURE_WINDOW_SECONDS: z.coerce
      .number()
      .int()
      .min(1)
      .max(86_400)
      .default(WEBHOOK_SECURITY_DEFAULTS.WEBHOOK_AUTH_FAILURE_WINDOW_SECONDS),
    /** Bounds the limiter's memory: past this many client IPs, the longest-quiet one is forgotten. */
    WEBHOOK_AUTH_FAILURE_MAX_CLIENTS: z.coerce
      .number()
      .int()
      .min(100)
      .max(1_000_000)
      .default(WEBHOOK_SECURITY_DEFAULTS.WEBHOOK_AUTH_FAILURE_MAX_CLIENTS),
    /**
     * Stripe endpoint signing secrets (`whsec_…`), comma-separated, current first: during a roll
     * Stripe signs with both. Unset: the dev secret in development, the endpoint off in production.
     */
    STRIPE_WEBHOOK_SECRETS: secretList((v) =>
      v.startsWith('whsec_') && v.length > 'whsec_'.length
        ? undefined
        : "must be the endpoint's signing secret, whsec_… (not an API key, sk_…)",
    ),
    /** How old a Stripe-Signature timestamp may be (Stripe signs every delivery attempt afresh). */
    STRIPE_WEBHOOK_TOLERANCE_SECONDS: toleranceSeconds(STRIPE_DEFAULT_TOLERANCE_SECONDS),
    /** Standard Webhooks symmetric secrets (`whsec_<base64>`), comma-separated, current first. */
    /**
     * Which Stripe mode's events may pay orders: `true` live, `false` test. Unset: live in
     * production, test elsewhere. An event of the other mode is kept as unmatched, never paid.
     */
    STRIPE_LIVEMODE: blankToUndefined.pipe(
      z
        .enum(['true', 'false'], { message: 'must be true or false' })
        .transform((v) => v === 'true')
        .optional(),
    ),
    /**
     * The shop's Stripe account (`acct_…`). Set: an event from any other account (a Connect
     * account's, another integration's) is kept as unmatched. Unset: not checked.
     */
    STRIPE_ACCOUNT_ID: blankToUndefined.pipe(
      z
        .string()
        .regex(/^acct_[A-Za-z0-9]{1,100}$/, 'must be a Stripe account ID, acct_…')
        .optional(),
    ),
    /**
     * A Stripe secret or restricted key (read access to PaymentIntents, Charges, Refunds and
     * Disputes), used only to fetch the objects of thin events. Unset: thin events are kept as
     * unmatched (thin_unresolved).
     */
    STRIPE_API_KEY: blankToUndefined.pipe(
      z
        .string()
        .regex(
          /^(sk|rk)_(test|live)_[A-Za-z0-9_]{8,}$/,
          'must be a Stripe secret (sk_…) or restricted (rk_…) key, not a publishable or webhook one',
        )
        .optional(),
    ),
    /** Where Stripe's API is (tests and local doubles); unset: Stripe's own, api.stripe.com. */
    STRIPE_API_BASE_URL: optionalUrl,
    STANDARD_WEBHOOK_SECRETS: secretList((v) => problemOf(() => parseStandardSecret(v))),
    /** Standard Webhooks ed25519 public keys (`whpk_<base64>`) for `v1a` signatures. */
    STANDARD_WEBHOOK_PUBLIC_KEYS: secretList((v) => problemOf(() => parseStandardPublicKey(v))),
    STANDARD_WEBHOOK_TOLERANCE_SECONDS: toleranceSeconds(STANDARD_DEFAULT_TOLERANCE_SECONDS),
    /** ISO 4217 currency of order totals: a provider's payment in another one is refused (422). */
    SHOP_CURRENCY: blankToUndefined.pipe(
      z
        .string()
        .regex(/^[A-Za-z]{3}$/, 'must be a three-letter ISO 4217 code (e.g. jpy, eur, usd)')
        .transform((v) => v.toLowerCase())
        .optional(),
    ),
    /**
     * Which reverse proxies may set X-Forwarded-For: a hop count or a list of addresses/CIDRs.
     * Unset: the socket's peer is the client, which behind a proxy makes every client one IP.
     */
    HTTP_TRUST_PROXY: blankToUndefined
      .refine((v) => v === undefined || parseTrustProxy(v) !== undefined, {
        message:
          'must be a hop count (e.g. 1) or comma-separated proxy addresses/CIDRs (e.g. 10.0.0.0/8,127.0.0.1)',
      })
      .transform((v) => (v === undefined ? false : (parseTrustProxy(v) ?? false))),
    /** `off` when the shop creates orders elsewhere: /api/v1/orders is then not served at all. */
    ORDERS_API: z.enum(['on', 'off'], { message: 'must be on or off' }).default('on'),
    /**
     * Keys of the orders API, several at once so one can be rotated out: `<id>:<key>:<scopes>`.
     * Unset: the API is open in development on loopback and refused elsewhere (http/orders-auth.ts).
     */
    ORDERS_API_KEYS: blankToUndefined.transform((v, ctx) => {
      if (v === undefined) return [];
      try {
        return parseApiKeys(v);
      } catch (error) {
        ctx.addIssue({ code: 'custom', message: (error as Error).message });
        return z.NEVER;
      }
    }),
    /**
     * host:port of the HTTP process's admin listener (/metrics, /readyz, /healthz), or off.
     * Loopback by default: what it reveals is for operators, never for the internet.
     */
    ADMIN_ADDRESS: blankToUndefined
      .pipe(
        z
          .union([z.literal('off'), hostPort('must be host:port (e.g. 127.0.0.1:9465) or off')])
          .optional(),
      )
      .transform((v) => v ?? DEFAULT_ADMIN_ADDRESS),
    WAREHOUSE_API_URL: optionalUrl,
    WAREHOUSE_SIMULATOR_PORT: port(4001),
    /** Where the simulator of `npm start` keeps its shipments across restarts. */
    WAREHOUSE_SIMULATOR_STATE: z.string().min(1).default('./data/warehouse-simulator.json'),
    /** Must stay below the warehouse activity's 8 s start-to-close timeout (src/workflows/payment.ts). */
    WAREHOUSE_TIMEOUT_MS: z.coerce.number().int().min(100).max(7_000).default(5_000),
    /**
     * Encrypts every payload in Temporal (histories hold no customer data in clear):
     * `<key id>:<base64 of 32 bytes>`, comma-separated with the current key first during rotation.
     */
    PAYLOAD_ENCRYPTION_KEY: blankToUndefined.refine((v) => v === undefined || keysAreValid(v), {
      message:
        'must be <key id>:<base64 of 32 bytes>[,<older id>:<base64>…] (e.g. k1:$(openssl rand -base64 32))',
    }),
    /** Bearer token the codec endpoint requires (the Web UI can send one); unset: none. */
    CODEC_AUTH_TOKEN: blankToUndefined,
    /**
     * Browser origins allowed to call the codec endpoint: the Temporal Web UI's. Unset: the
     * origin of TEMPORAL_UI_URL when set, else the embedded UI's (localhost and 127.0.0.1 on
     * TEMPORAL_UI_PORT); filled in below, once those are known.
     */
    CODEC_CORS_ORIGINS: blankToUndefined.transform((v) =>
      v
        ?.split(',')
        .map((o) => o.trim())
        .filter((o) => o.length > 0),
    ),
    ALERT_WEBHOOK_URL: optionalUrl,
    /**
     * Failures of one cause are posted as one digest: the first at once, the rest at most once
     * per this window (which is also how often the digest checks whether they were retried).
     */
    ALERT_DIGEST_WINDOW_SECONDS: z.coerce.number().int().min(1).max(86_400).default(300),
    /** An incident with no failure of its cause for this long is resolved (one post). */
    ALERT_DIGEST_QUIET_SECONDS: z.coerce
      .number()
      .int()
      .min(1)
      .max(7 * 86_400)
      .default(1800),
    /**
     * A paid order not handed to the warehouse within this long raises one SLA alert
     * (FulfilmentSlaBreached), resolved when none is late. Checked once a minute.
     */
    FULFILMENT_SLA_SECONDS: z.coerce
      .number()
      .int()
      .min(60)
      .max(30 * 86_400)
      .default(3600),
    /** A payment workflow still running after this long raises one SLA alert (PaymentSlaBreached). */
    PAYMENT_SLA_SECONDS: z.coerce
      .number()
      .int()
      .min(60)
      .max(30 * 86_400)
      .default(300),
    /** Base URL of the Temporal Web UI for links in alerts; the embedded dev server's by default. */
    TEMPORAL_UI_URL: optionalUrl,
    SMTP_URL: optionalUrl,
    /** Sender of order confirmations; its domain also names the deterministic Message-IDs. */
    MAIL_FROM: z.string().min(3).default('Order Payments <orders@order-payments.local>'),
    /** Port of the local SMTP sink that `npm start` runs when SMTP_URL is unset. */
    SMTP_SINK_PORT: port(2525),
    /** Most SMTP connections one payments worker keeps open for confirmations (nodemailer's pool). */
    SMTP_MAX_CONNECTIONS: z.coerce.number().int().min(1).max(100).default(5),
    /** Most connections one process's PostgreSQL pool opens; × processes must fit max_connections. */
    DATABASE_POOL_MAX: z.coerce.number().int().min(1).max(1000).default(10),
    /** Activity slots of the payments worker (the SDK's default, 100). */
    WORKER_MAX_CONCURRENT_ACTIVITIES: z.coerce.number().int().min(1).max(10_000).default(100),
    /** Workflow task slots of the payments worker (the SDK's default, 40; at least 2: sticky and normal queue). */
    WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: z.coerce.number().int().min(2).max(10_000).default(40),
    /** A prebuilt workflow bundle (npm run build); unset: dist/workflow-bundle.js next to a compiled worker, else bundled at start. */
    WORKFLOW_BUNDLE_PATH: blankToUndefined,
    /** The Worker Deployment every worker of this app belongs to (docs/deploys.md); no `.` or `:`. */
    WORKER_DEPLOYMENT_NAME: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,100}$/, {
        message: 'must be 1-100 letters, digits, - or _ (the server refuses . and :)',
      })
      .default('order-payments'),
    /** This build's ID; unset: the first 12 hex digits of the workflow bundle's SHA-256. */
    WORKER_BUILD_ID: blankToUndefined.pipe(
      z
        .string()
        .regex(/^[A-Za-z0-9_-]{1,64}$/, {
          message: 'must be 1-64 letters, digits, - or _ (e.g. a commit hash or image tag)',
        })
        .optional(),
    ),
    /** `off`: workers poll unversioned, for a server without Worker Deployments (before 1.28). */
    WORKER_VERSIONING: z.enum(['on', 'off'], { message: 'must be on or off' }).default('on'),
    /**
     * What a standalone worker does with its build on the server: `if-none` makes it current when
     * the deployment has no current build yet (the first start), `never` leaves that to the
     * operator (`npm run deployment -- current`). `npm start` always makes its build current.
     */
    WORKER_SET_CURRENT: z
      .enum(['if-none', 'never'], { message: 'must be if-none or never' })
      .default('if-none'),
    /** host:port of the worker's Prometheus endpoint (/metrics), or off. Unset: off; `npm start` uses 127.0.0.1:9464. */
    WORKER_METRICS_ADDRESS: blankToUndefined.pipe(
      z
        .union([z.literal('off'), hostPort('must be host:port (e.g. 0.0.0.0:9464) or off')])
        .optional(),
    ),
    /** host:port of the standalone worker's /healthz and /readyz (for Kubernetes probes); unset: off. */
    WORKER_HEALTH_ADDRESS: blankToUndefined.pipe(
      hostPort('must be host:port, e.g. 0.0.0.0:8081').optional(),
    ),
    /**
     * Alert when no worker has polled a task queue for this long; 0 turns the watchdog off. An idle
     * worker renews its long poll only about once a minute, so shorter would alert on healthy ones.
     */
    TASK_QUEUE_NO_POLLER_ALERT_SECONDS: z.coerce
      .number()
      .int()
      .refine((v) => v === 0 || (v >= 90 && v <= 86_400), {
        message:
          'must be 0 (off) or 90-86400: an idle worker renews its poll about once a minute, so less would alert on healthy workers',
      })
      .default(120),
    /** How often the HTTP process's watchdog asks Temporal about the task queues' pollers. */
    TASK_QUEUE_WATCHDOG_INTERVAL_SECONDS: z.coerce.number().int().min(5).max(3600).default(30),
    /** Makes each stock aggregation take at least this long: shows the schedule's overlap policy. */
    STOCK_AGGREGATION_DELAY_MS: z.coerce
      .number()
      .int()
      .min(0)
      .max(15 * 60_000)
      .default(0),
    /** Directory of the PDF invoices (`order-<id>.pdf`); shared by every heavy worker. */
    INVOICE_DIR: z.string().min(1).default('./data/invoices'),
    /** Directory of the order exports (`<exportId>/orders.csv`); shared by every heavy worker. */
    EXPORT_DIR: z.string().min(1).default('./data/exports'),
    /** Activities one heavy worker runs at once: low, so PDFs and exports never crowd the machine. */
    HEAVY_WORKER_MAX_CONCURRENT_ACTIVITIES: z.coerce.number().int().min(1).max(100).default(2),
    /** Makes each invoice take at least this long: shows a slow heavy queue beside fast payments. */
    INVOICE_DELAY_MS: z.coerce.number().int().min(0).max(60_000).default(0),
  })
  .superRefine((c, ctx) => {
    if (c.ALERT_DIGEST_QUIET_SECONDS < c.ALERT_DIGEST_WINDOW_SECONDS) {
      ctx.addIssue({
        code: 'custom',
        path: ['ALERT_DIGEST_QUIET_SECONDS'],
        message: 'must be at least ALERT_DIGEST_WINDOW_SECONDS: quiet is checked once a window',
      });
    }
    if (
      c.PAYMENT_WEBHOOK_SECRET_PREVIOUS !== undefined &&
      c.PAYMENT_WEBHOOK_SECRET_PREVIOUS === c.PAYMENT_WEBHOOK_SECRET
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['PAYMENT_WEBHOOK_SECRET_PREVIOUS'],
        message:
          'equals PAYMENT_WEBHOOK_SECRET: set it to the secret being rotated out, or unset it',
      });
    }
    if (c.NODE_ENV !== 'production') return;
    const previous = c.PAYMENT_WEBHOOK_SECRET_PREVIOUS;
    if (previous !== undefined && (previous === DEV_WEBHOOK_SECRET || previous.length < 16)) {
      ctx.addIssue({
        code: 'custom',
        path: ['PAYMENT_WEBHOOK_SECRET_PREVIOUS'],
        message:
          'in production the previous secret must be a real one (16+ characters), not the dev default',
      });
    }
    if (c.PAYMENT_WEBHOOK_SECRET === DEV_WEBHOOK_SECRET || c.PAYMENT_WEBHOOK_SECRET.length < 16) {
      ctx.addIssue({
        code: 'custom',
        path: ['PAYMENT_WEBHOOK_SECRET'],
        message:
          'set the provider secret (16+ characters) in production; the dev default is public',
      });
    }
    if (c.STRIPE_WEBHOOK_SECRETS?.some((v) => v === DEV_STRIPE_WEBHOOK_SECRET || v.length < 22)) {
      ctx.addIssue({
        code: 'custom',
        path: ['STRIPE_WEBHOOK_SECRETS'],
        message:
          "in production use the endpoint's own signing secret (Dashboard > Webhooks), not the dev default",
      });
    }
    if (
      c.STANDARD_WEBHOOK_SECRETS?.some(
        (v) => v === DEV_STANDARD_WEBHOOK_SECRET || parseStandardSecret(v).length < 16,
      )
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['STANDARD_WEBHOOK_SECRETS'],
        message: 'in production use the sender’s secret (16+ bytes of key), not the dev default',
      });
    }
    if (c.STRIPE_API_KEY?.includes('_test_') && c.STRIPE_LIVEMODE !== false) {
      ctx.addIssue({
        code: 'custom',
        path: ['STRIPE_API_KEY'],
        message:
          'a test-mode key cannot fetch live-mode events: use the live key, or set STRIPE_LIVEMODE=false',
      });
    }
    const providers = [
      c.STRIPE_WEBHOOK_SECRETS,
      c.STANDARD_WEBHOOK_SECRETS,
      c.STANDARD_WEBHOOK_PUBLIC_KEYS,
    ];
    if (c.SHOP_CURRENCY === undefined && providers.some((list) => list !== undefined)) {
      ctx.addIssue({
        code: 'custom',
        path: ['SHOP_CURRENCY'],
        message:
          'set it in production when a Stripe or Standard Webhooks endpoint is configured: their payments carry a currency, and only this one may pay an order',
      });
    }
    if (!c.TEMPORAL_ADDRESS) {
      ctx.addIssue({
        code: 'custom',
        path: ['TEMPORAL_ADDRESS'],
        message: 'set it in production; the embedded dev server is for development only',
      });
    }
    if (!c.SMTP_URL) {
      ctx.addIssue({
        code: 'custom',
        path: ['SMTP_URL'],
        message:
          'set it in production (smtp://user:pass@host:587); the local SMTP sink is for development only',
      });
    }
    if (!c.WAREHOUSE_API_URL) {
      ctx.addIssue({
        code: 'custom',
        path: ['WAREHOUSE_API_URL'],
        message: 'set it in production; the warehouse simulator is for development only',
      });
    }
  })
  .transform((c) => {
    // Development serves every provider's endpoint on public dev secrets; production only
    // those configured (an unconfigured one is not served: 404).
    const dev = c.NODE_ENV !== 'production';
    const standardConfigured =
      c.STANDARD_WEBHOOK_SECRETS !== undefined || c.STANDARD_WEBHOOK_PUBLIC_KEYS !== undefined;
    return {
      ...c,
      CODEC_CORS_ORIGINS: c.CODEC_CORS_ORIGINS ?? defaultCodecOrigins(c),
      STRIPE_WEBHOOK_SECRETS: c.STRIPE_WEBHOOK_SECRETS ?? (dev ? [DEV_STRIPE_WEBHOOK_SECRET] : []),
      STANDARD_WEBHOOK_SECRETS:
        c.STANDARD_WEBHOOK_SECRETS ??
        (dev && !standardConfigured ? [DEV_STANDARD_WEBHOOK_SECRET] : []),
      STANDARD_WEBHOOK_PUBLIC_KEYS: c.STANDARD_WEBHOOK_PUBLIC_KEYS ?? [],
      SHOP_CURRENCY: c.SHOP_CURRENCY ?? DEFAULT_SHOP_CURRENCY,
      STRIPE_LIVEMODE: c.STRIPE_LIVEMODE ?? !dev,
    };
  });

/**
 * A comma-separated list of secrets or keys, each checked by `problem` (undefined: fine); unset
 * or blank: undefined. A value listed twice is refused: a rotation lists two different ones.
 * Messages name the position, never the value.
 */
function secretList(problem: (value: string) => string | undefined) {
  return blankToUndefined.transform((v, ctx) => {
    if (v === undefined) return undefined;
    const values = v
      .split(',')
      .map((e) => e.trim())
      .filter((e) => e.length > 0);
    values.forEach((value, index) => {
      const found =
        problem(value) ?? (values.indexOf(value) < index ? 'is listed twice' : undefined);
      if (found !== undefined) {
        ctx.addIssue({ code: 'custom', message: `entry ${index + 1}: ${found}` });
      }
    });
    return values;
  });
}

function problemOf(parse: () => unknown): string | undefined {
  try {
    parse();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
}

/** A signature scheme's tolerance window: how far its timestamp may be from our clock. */
function toleranceSeconds(fallback: number) {
  return z.coerce
    .number()
    .int()
    .min(1)
    .max(3600, 'must be at most 3600: a wider window lets a leaked request be replayed for longer')
    .default(fallback);
}

/** Where the Web UI that calls the codec endpoint is served from, unless told otherwise. */
function defaultCodecOrigins(c: { TEMPORAL_UI_URL?: string; TEMPORAL_UI_PORT: number }): string[] {
  if (c.TEMPORAL_UI_URL) return [new URL(c.TEMPORAL_UI_URL).origin];
  return [`http://localhost:${c.TEMPORAL_UI_PORT}`, `http://127.0.0.1:${c.TEMPORAL_UI_PORT}`];
}

function optionalUrlLikeAddress() {
  // host:port, as the Temporal client expects it (no scheme).
  return blankToUndefined.pipe(
    z
      .string()
      .regex(
        /^[A-Za-z0-9.-]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/,
        'must be host:port, e.g. 127.0.0.1:7233',
      )
      .optional(),
  );
}

/** A listening address: host:port, IPv6 hosts in brackets ([::]:9464). */
function hostPort(message: string) {
  return z.string().regex(/^[A-Za-z0-9.-]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$/, message);
}

/**
 * `false` (no proxy), a hop count, or proxy addresses/CIDRs, as Fastify's `trustProxy` takes
 * them; undefined when the value is not understood.
 */
function parseTrustProxy(value: string): false | number | string[] | undefined {
  if (/^\d+$/.test(value)) {
    const hops = Number(value);
    if (hops > 10) return undefined;
    return hops === 0 ? false : hops;
  }
  const entries = value.split(',').map((e) => e.trim());
  const isAddressOrCidr = (entry: string) => {
    const [address = '', bits, ...rest] = entry.split('/');
    const family = isIP(address);
    if (family === 0 || rest.length > 0) return false;
    if (bits === undefined) return true;
    return /^\d{1,3}$/.test(bits) && Number(bits) <= (family === 4 ? 32 : 128);
  };
  return entries.every(isAddressOrCidr) ? entries : undefined;
}

export type Config = Readonly<
  z.infer<typeof schema> & {
    /**
     * TLS, API key and profile of the Temporal connection (src/temporal/connection.ts). Its
     * address and namespace are TEMPORAL_ADDRESS and TEMPORAL_NAMESPACE above, which hold the
     * values in force: the variable's, else the temporal.toml profile's.
     */
    temporalConnection: TemporalConnectionSettings;
  }
>;

/** Thrown with every problem at once, each naming the variable and what to fix. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses and freezes the configuration; `env` is injectable so tests never touch process.env. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const problems: string[] = [];
  // Temporal's settings are read as the Temporal CLI reads them (temporal.toml profile, then
  // TEMPORAL_* variables); the address and namespace in force then go through the checks below.
  let temporal: TemporalConnectionSettings | undefined;
  try {
    temporal = loadTemporalConnection(env);
  } catch (error) {
    if (!(error instanceof TemporalSettingsError)) throw error;
    problems.push(...error.problems);
  }
  const result = schema.safeParse(
    temporal
      ? { ...env, TEMPORAL_ADDRESS: temporal.address, TEMPORAL_NAMESPACE: temporal.namespace }
      : env,
  );
  if (!result.success) {
    problems.push(
      ...result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`),
    );
  }
  if (problems.length > 0 || !result.success || !temporal) throw new ConfigError(problems);
  return Object.freeze({ ...result.data, temporalConnection: temporal });
}

function keysAreValid(setting: string): boolean {
  try {
    parseEncryptionKeys(setting);
    return true;
  } catch {
    return false;
  }
}

/** Where the embedded dev server of `npm start` listens (TEMPORAL_DEV_PORT, on loopback). */
export function embeddedTemporalAddress(config: Pick<Config, 'TEMPORAL_DEV_PORT'>): string {
  return `127.0.0.1:${config.TEMPORAL_DEV_PORT}`;
}
