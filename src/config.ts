import { z } from 'zod';

/**
 * The only reader of process.env. Every setting has a default that works on a laptop; the
 * production-only rules at the bottom refuse configurations that would quietly lose or fake work
 * (the seed's `QUEUE_CONNECTION=sync` in production).
 */

const DEV_WEBHOOK_SECRET = 'dev-webhook-secret';

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
    WAREHOUSE_API_URL: optionalUrl,
    WAREHOUSE_SIMULATOR_PORT: port(4001),
    /** Must stay below the warehouse activity's 8 s start-to-close timeout (src/workflows/payment.ts). */
    WAREHOUSE_TIMEOUT_MS: z.coerce.number().int().min(100).max(7_000).default(5_000),
    ALERT_WEBHOOK_URL: optionalUrl,
    /** Base URL of the Temporal Web UI for links in alerts; the embedded dev server's by default. */
    TEMPORAL_UI_URL: optionalUrl,
    SMTP_URL: optionalUrl,
  })
  .superRefine((c, ctx) => {
    if (c.NODE_ENV !== 'production') return;
    if (c.PAYMENT_WEBHOOK_SECRET === DEV_WEBHOOK_SECRET || c.PAYMENT_WEBHOOK_SECRET.length < 16) {
      ctx.addIssue({
        code: 'custom',
        path: ['PAYMENT_WEBHOOK_SECRET'],
        message:
          'set the provider secret (16+ characters) in production; the dev default is public',
      });
    }
    if (!c.TEMPORAL_ADDRESS) {
      ctx.addIssue({
        code: 'custom',
        path: ['TEMPORAL_ADDRESS'],
        message: 'set it in production; the embedded dev server is for development only',
      });
    }
    if (!c.WAREHOUSE_API_URL) {
      ctx.addIssue({
        code: 'custom',
        path: ['WAREHOUSE_API_URL'],
        message: 'set it in production; the warehouse simulator is for development only',
      });
    }
  });

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

export type Config = Readonly<z.infer<typeof schema>>;

/** Thrown with every problem at once, each naming the variable and what to fix. */
export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Parses and freezes the configuration; `env` is injectable so tests never touch process.env. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const result = schema.safeParse(env);
  if (!result.success) {
    throw new ConfigError(
      result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`),
    );
  }
  return Object.freeze(result.data);
}
