import { Agent } from 'node:http';
import type { FastifyInstance } from 'fastify';
import fc from 'fast-check';
import { PAYMENT_WEBHOOK_PATH } from '../../src/http/routes/payment-webhook';
import type { PaymentWorkflowInput } from '../../src/shared/payment';
import { postWithHeaderLines } from '../support/app';
import { buildWebhookApp, recordingPaymentStarter } from '../support/webhook';
import {
  againstFirst,
  bodyArb,
  classifyBody,
  contentEncodingArb,
  contentTypeArb,
  extraHeadersArb,
  firstStartOf,
  FUZZ_RUNS,
  fuzzParameters,
  fuzzTimeoutMs,
  hmacHex,
  isAuthentic,
  type Outcome,
  signatureHeaderNameArb,
  signatureNoiseArb,
  signatureValues,
  validPaymentBody,
} from './webhook-fuzz-arbitraries';

/*
 * Property-based fuzzing of POST /api/v1/webhooks/payment with a recording PaymentStarter.
 * `npm test` runs each property a few hundred times; a full-size run:
 *
 *   FUZZ_RUNS=20000 npx jest test/http/webhook-fuzz
 *
 * A failure prints a seed and path; FUZZ_SEED=<seed> replays the same sequence.
 */

const SECRETS = { current: 'fuzz-current-secret', previous: 'fuzz-previous-secret' };
const BODY_LIMIT = 4096;
const NOW_S = 1_700_000_000;
const TOLERANCE_S = 300;

/** `starts`: what the recording starter was asked to start before this request. */
function expectedOutcome(
  raw: Buffer,
  authentic: boolean,
  starts: readonly PaymentWorkflowInput[],
): Outcome {
  if (raw.length > BODY_LIMIT) return { status: 413, kind: 'too-large' };
  if (!authentic) return { status: 401, kind: 'unauthenticated' };
  return againstFirst(classifyBody(raw), firstStartOf(starts));
}

/** What the starter must have been asked: a start for every valid payment, conflicting or not. */
// The contract's payment is its own reference: its event ID names it.
const startsFor = (expected: Outcome) =>
  expected.kind === 'accepted' || expected.kind === 'conflict'
    ? [{ ...expected.input, paymentRef: expected.input.eventId }]
    : [];

/** A POST of `raw` to the contract's endpoint with exactly these header lines. */
function post(
  target: FastifyInstance,
  raw: string | Buffer,
  headers: Record<string, string | string[]>,
  remoteAddress?: string,
) {
  return target.inject({
    method: 'POST',
    url: PAYMENT_WEBHOOK_PATH,
    payload: raw,
    headers,
    remoteAddress,
  });
}

/** Header `name` once per value: none for no values, one line for one, repeated lines for more. */
const headerLines = (name: string, values: readonly string[]) =>
  values.length === 0 ? {} : { [name]: values.length === 1 ? values[0]! : [...values] };

/** Counts of each outcome, to prove the generators reach every branch, not just 401. */
function tally() {
  const counts = new Map<string, number>();
  return {
    add: (kind: string) => counts.set(kind, (counts.get(kind) ?? 0) + 1),
    of: (kind: string) => counts.get(kind) ?? 0,
  };
}

describe('webhook fuzzing with a recording starter (in-process requests)', () => {
  const payments = recordingPaymentStarter();
  let app: FastifyInstance;
  let timestampedApp: FastifyInstance;

  beforeAll(async () => {
    const config = {
      PAYMENT_WEBHOOK_SECRET: SECRETS.current,
      PAYMENT_WEBHOOK_SECRET_PREVIOUS: SECRETS.previous,
      WEBHOOK_BODY_LIMIT_BYTES: BODY_LIMIT,
      // Failures are most of what these properties send; the limiter has its own property.
      WEBHOOK_AUTH_FAILURE_LIMIT: 0,
    };
    app = await buildWebhookApp({ config, payments });
    timestampedApp = await buildWebhookApp({
      config: {
        ...config,
        WEBHOOK_SIGNATURE_SCHEME: 'timestamped',
        WEBHOOK_TOLERANCE_SECONDS: TOLERANCE_S,
      },
      payments,
      now: () => NOW_S * 1000,
    });
  });

  afterAll(async () => {
    await app?.close();
    await timestampedApp?.close();
  });

  it(
    'answers every request as the contract says: no 5xx, a start exactly for valid signed payments',
    async () => {
      const seen = tally();
      await fc.assert(
        fc.asyncProperty(
          bodyArb(BODY_LIMIT),
          signatureNoiseArb,
          signatureHeaderNameArb,
          contentTypeArb,
          contentEncodingArb,
          extraHeadersArb,
          async (raw, noise, signatureName, contentType, contentEncoding, extra) => {
            const signatures = signatureValues(noise, SECRETS, raw);
            const expected = expectedOutcome(
              raw,
              isAuthentic(signatures, [SECRETS.current, SECRETS.previous], raw),
              payments.starts,
            );
            const before = payments.starts.length;

            const res = await post(app, raw, {
              ...extra,
              ...(contentType === undefined ? {} : { 'content-type': contentType }),
              ...(contentEncoding === undefined ? {} : { 'content-encoding': contentEncoding }),
              ...headerLines(signatureName, signatures),
            });

            seen.add(expected.kind);
            expect(res.statusCode).toBe(expected.status);
            expect(payments.starts.slice(before)).toEqual(startsFor(expected));
            const answer = res.json<{ status?: string; error?: string }>();
            if (expected.kind === 'accepted') expect(answer).toEqual({ status: 'accepted' });
            else if (expected.kind === 'ignored') expect(answer).toEqual({ status: 'ignored' });
            else expect(answer.error).toEqual(expect.any(String));
          },
        ),
        fuzzParameters(FUZZ_RUNS),
      );
      // Every branch was exercised (a generator that stopped producing valid events would
      // otherwise leave this property passing on 401s alone).
      const minimum = Math.max(1, Math.floor(FUZZ_RUNS / 100));
      for (const kind of ['accepted', 'ignored', 'malformed', 'unauthenticated', 'too-large']) {
        expect([kind, seen.of(kind)]).toEqual([kind, expect.any(Number)]);
        expect(seen.of(kind)).toBeGreaterThanOrEqual(minimum);
      }
      // Own "__proto__" keys were parsed as data, never as prototypes.
      expect(Object.prototype).not.toHaveProperty('event');
      expect(Object.prototype).not.toHaveProperty('amount');
    },
    fuzzTimeoutMs(FUZZ_RUNS),
  );

  it(
    'never answers 5xx nor starts a workflow for an unsigned request, whatever the transport says',
    async () => {
      const method = fc.constantFrom('POST', 'POST', 'GET', 'PUT', 'PATCH', 'DELETE', 'OPTIONS');
      const query = fc.oneof(fc.constant(''), fc.string({ maxLength: 30 }).map(encodeURI));
      const lengthClaim = fc.option(
        fc.oneof(
          fc.nat(10_000).map(String),
          fc.constantFrom('-1', 'abc', '1e3', '', '99999999999999999999'),
        ),
      );
      // Any header at all may arrive twice: arrays on every one of them.
      const anyHeaders = fc.dictionary(
        fc.oneof(
          fc.constantFrom('content-type', 'content-encoding', 'transfer-encoding', 'expect'),
          fc.stringMatching(/^[a-z][a-z0-9-]{0,15}$/),
        ),
        fc.oneof(
          fc.string({ maxLength: 40 }),
          fc.array(fc.string({ maxLength: 20 }), { minLength: 2, maxLength: 3 }),
        ),
        { maxKeys: 5 },
      );
      await fc.assert(
        fc.asyncProperty(
          bodyArb(BODY_LIMIT),
          method,
          query,
          lengthClaim,
          anyHeaders,
          signatureNoiseArb,
          async (raw, verb, q, length, headers, noise) => {
            const signatures = signatureValues(noise, SECRETS, raw).filter(
              (s) => !isAuthentic([s], [SECRETS.current, SECRETS.previous], raw),
            );
            const before = payments.starts.length;
            const res = await app.inject({
              method: verb as 'POST',
              url: `${PAYMENT_WEBHOOK_PATH}${q === '' ? '' : `?${q}`}`,
              payload: verb === 'GET' ? undefined : raw,
              headers: {
                ...headers,
                ...(length === null ? {} : { 'content-length': length }),
                ...headerLines('x-payment-signature', signatures),
              },
            });
            expect(res.statusCode).toBeGreaterThanOrEqual(400);
            expect(res.statusCode).toBeLessThan(500);
            expect(payments.starts.length).toBe(before);
          },
        ),
        fuzzParameters(FUZZ_RUNS),
      );
    },
    fuzzTimeoutMs(FUZZ_RUNS),
  );

  it(
    'accepts timestamped requests only when authentic and inside the tolerance window',
    async () => {
      const timestampArb = fc.oneof(
        fc.integer({ min: -TOLERANCE_S, max: TOLERANCE_S }).map((d) => String(NOW_S + d)),
        fc.integer({ min: TOLERANCE_S + 1, max: 10 ** 7 }).map((d) => String(NOW_S - d)),
        fc.integer({ min: TOLERANCE_S + 1, max: 10 ** 7 }).map((d) => String(NOW_S + d)),
        fc.constantFrom(
          `0${NOW_S}`,
          ` ${NOW_S} `,
          `${NOW_S}.0`,
          `${NOW_S * 1000}`,
          `-${NOW_S}`,
          `+${NOW_S}`,
          '0',
          '',
          '999999999999',
          '1e9',
        ),
        fc.string({ maxLength: 15 }),
      );
      const timestampHeaderArb = fc.oneof(
        { arbitrary: timestampArb.map((t) => [t]), weight: 8 },
        { arbitrary: fc.constant([] as string[]), weight: 1 },
        { arbitrary: fc.tuple(timestampArb, timestampArb), weight: 1 },
      );
      // What the signer put before the body: the header's timestamp, another one, or nothing.
      const signedOverArb = fc.constantFrom('same', 'same', 'same', 'other', 'body-only');

      await fc.assert(
        fc.asyncProperty(
          validPaymentBody,
          timestampHeaderArb,
          signedOverArb,
          signatureNoiseArb,
          async (text, timestamps, signedOver, noise) => {
            const raw = Buffer.from(text);
            const sent = timestamps[0]?.trim() ?? '';
            const prefix =
              signedOver === 'same' ? `${sent}.` : signedOver === 'other' ? `${NOW_S + 1}.` : '';
            const signatures = signatureValues(noise, SECRETS, prefix, raw);
            const secrets = [SECRETS.current, SECRETS.previous];

            // The contract of the timestamped scheme, in the order a reader would check it.
            const reason = ((): string | undefined => {
              // A repeated header is refused as such, whatever its values.
              if (signatures.length > 1) return 'exactly one X-Payment-Signature header is allowed';
              const signature = (signatures[0] ?? '').trim();
              if (signature === '') return 'missing X-Payment-Signature header';
              if (timestamps.length > 1) return 'exactly one X-Payment-Timestamp header is allowed';
              const timestamp = (timestamps[0] ?? '').trim();
              if (timestamp === '') return 'missing X-Payment-Timestamp header';
              if (!/^[0-9]{1,12}$/.test(timestamp))
                return 'X-Payment-Timestamp must be a Unix time in seconds';
              if (!isAuthentic([signature], secrets, `${timestamp}.`, raw))
                return 'invalid signature';
              if (Math.abs(Number(timestamp) - NOW_S) > TOLERANCE_S)
                return 'X-Payment-Timestamp is outside the 300 s tolerance window';
              return undefined;
            })();
            const before = payments.starts.length;

            const res = await post(timestampedApp, raw, {
              'content-type': 'application/json',
              ...headerLines('x-payment-timestamp', timestamps),
              ...headerLines('x-payment-signature', signatures),
            });

            if (reason !== undefined) {
              expect(res.statusCode).toBe(401);
              expect(res.json()).toEqual({ error: reason });
              expect(payments.starts.length).toBe(before);
            } else {
              const expected = againstFirst(
                classifyBody(raw),
                firstStartOf(payments.starts.slice(0, before)),
              );
              expect(res.statusCode).toBe(expected.status);
              expect(payments.starts.slice(before)).toEqual(startsFor(expected));
            }
          },
        ),
        fuzzParameters(FUZZ_RUNS),
      );
    },
    fuzzTimeoutMs(FUZZ_RUNS),
  );
});

describe('webhook fuzzing of the failed-signature rate limit', () => {
  const LIMIT = 5;
  const WINDOW_MS = 60_000;
  // Attackers and providers never share an address: the budget belongs to an address.
  const attackers = ['203.0.113.1', '203.0.113.2', '2001:db8:1:1::1', '2001:db8:1:1::2'];
  const providers = ['198.51.100.1', '2001:db8:2:2::1'];

  const step = fc.record({
    client: fc.oneof(
      {
        arbitrary: fc.constantFrom(...attackers).map((ip) => ({ ip, role: 'attacker' as const })),
        weight: 3,
      },
      {
        arbitrary: fc.constantFrom(...providers).map((ip) => ({ ip, role: 'provider' as const })),
        weight: 1,
      },
    ),
    authentic: fc.boolean(),
    waitMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 30_000 })),
  });

  it(
    'bounds failures per client, never refuses a valid provider, and always says when to retry',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.array(step, { minLength: 1, maxLength: 60, size: 'max' }),
          async (steps) => {
            let now = 1_000_000;
            const payments = recordingPaymentStarter();
            const app = await buildWebhookApp({
              config: {
                WEBHOOK_AUTH_FAILURE_LIMIT: LIMIT,
                WEBHOOK_AUTH_FAILURE_WINDOW_SECONDS: WINDOW_MS / 1000,
              },
              payments,
              now: () => now,
            });
            try {
              // The /64 is the unit of an IPv6 budget.
              const unit = (ip: string) =>
                ip.includes(':') ? ip.split(':').slice(0, 4).join(':') : ip;
              const unauthorized = new Map<string, number[]>();
              for (const { client, authentic, waitMs } of steps) {
                now += waitMs;
                const valid = client.role === 'provider' || authentic;
                const raw = JSON.stringify({
                  id: `evt-${now}-${payments.starts.length}`,
                  event: 'payment.succeeded',
                  order_id: 1,
                  amount: 1,
                });
                const failuresInWindow = (ip: string) =>
                  (unauthorized.get(unit(ip)) ?? []).filter((t) => t > now - WINDOW_MS).length;
                const res = await post(
                  app,
                  raw,
                  { 'x-payment-signature': hmacHex(valid ? 'test-webhook-secret' : 'wrong', raw) },
                  client.ip,
                );
                if (client.role === 'provider') expect(res.statusCode).toBe(200);
                // Refused exactly when this address already failed LIMIT times in the window.
                expect(res.statusCode === 429).toBe(failuresInWindow(client.ip) >= LIMIT);
                if (res.statusCode === 429) {
                  const retryAfter = Number(res.headers['retry-after']);
                  expect(Number.isInteger(retryAfter)).toBe(true);
                  expect(retryAfter).toBeGreaterThanOrEqual(1);
                  expect(retryAfter).toBeLessThanOrEqual(WINDOW_MS / 1000);
                } else {
                  expect(res.statusCode).toBe(valid ? 200 : 401);
                }
                if (res.statusCode === 401) {
                  const times = unauthorized.get(unit(client.ip)) ?? [];
                  times.push(now);
                  unauthorized.set(unit(client.ip), times);
                  // No more than LIMIT signature checks failed in any window: the HMAC work an
                  // attacker can cause per address is bounded.
                  expect(failuresInWindow(client.ip)).toBeLessThanOrEqual(LIMIT);
                }
              }
              // Once a window has passed, every client is heard again.
              now += WINDOW_MS;
              for (const ip of attackers) {
                const raw = JSON.stringify({ id: `late-${ip.replace(/:/g, '-')}`, event: 'x' });
                const res = await post(
                  app,
                  raw,
                  { 'x-payment-signature': hmacHex('test-webhook-secret', raw) },
                  ip,
                );
                expect(res.statusCode).toBe(200);
              }
            } finally {
              await app.close();
            }
          },
        ),
        fuzzParameters(Math.max(20, Math.ceil(FUZZ_RUNS / 10))),
      );
    },
    fuzzTimeoutMs(FUZZ_RUNS, 20),
  );
});

describe('webhook fuzzing over real HTTP (raw header lines)', () => {
  const payments = recordingPaymentStarter();
  let app: FastifyInstance;
  let port: number;
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });

  beforeAll(async () => {
    app = await buildWebhookApp({
      config: {
        PAYMENT_WEBHOOK_SECRET: SECRETS.current,
        PAYMENT_WEBHOOK_SECRET_PREVIOUS: SECRETS.previous,
        WEBHOOK_BODY_LIMIT_BYTES: BODY_LIMIT,
        WEBHOOK_AUTH_FAILURE_LIMIT: 0,
      },
      payments,
    });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const address = app.server.address();
    port = typeof address === 'object' && address !== null ? address.port : 0;
  });

  afterAll(async () => {
    agent.destroy();
    await app?.close();
  });

  /** POSTs with exactly these header lines (names spelt as given, repeats kept). */
  function post(raw: Buffer, lines: [string, string][]) {
    return postWithHeaderLines(port, PAYMENT_WEBHOOK_PATH, raw, lines.flat(), agent);
  }

  it(
    'treats header case, whitespace and repeated lines as the contract says',
    async () => {
      const printable = fc.string({ maxLength: 40 }).filter((s) => /^[\x20-\x7e]*$/.test(s));
      const contentType = fc.oneof(
        fc.constantFrom(undefined, 'application/json', ';;;', 'a/b/c', 'text/plain'),
        printable,
      );
      await fc.assert(
        fc.asyncProperty(
          fc.oneof(
            { arbitrary: validPaymentBody.map((t) => Buffer.from(t)), weight: 3 },
            { arbitrary: bodyArb(BODY_LIMIT).filter((b) => b.length <= BODY_LIMIT), weight: 2 },
          ),
          signatureNoiseArb,
          signatureHeaderNameArb,
          contentType,
          contentEncodingArb,
          async (raw, noise, signatureName, type, encoding) => {
            // Over the wire, values are header-safe: the junk signature stays printable.
            const signatures = signatureValues(
              { ...noise, junk: noise.junk.replace(/[^\x20-\x7e]/g, '?') },
              SECRETS,
              raw,
            ).map((s) => s.replace(/[^\t\x20-\x7e]/g, '?'));
            const lines: [string, string][] = [
              ...signatures.map((s): [string, string] => [signatureName, s]),
              ...(type === undefined ? [] : [['Content-Type', type] as [string, string]]),
              ...(encoding === undefined
                ? []
                : [['Content-Encoding', encoding] as [string, string]]),
            ];
            // Node trims the whitespace around a value; repeated lines (which Node joins with
            // ", " in request.headers) are never authentic, however they join.
            const expected = expectedOutcome(
              raw,
              isAuthentic(signatures, [SECRETS.current, SECRETS.previous], raw),
              payments.starts,
            );
            const before = payments.starts.length;

            const res = await post(raw, lines);

            expect(res.status).toBe(expected.status);
            if (signatures.length > 1) {
              expect(JSON.parse(res.body)).toEqual({
                error: 'exactly one X-Payment-Signature header is allowed',
              });
            }
            expect(payments.starts.slice(before)).toEqual(startsFor(expected));
          },
        ),
        fuzzParameters(Math.max(50, Math.ceil(FUZZ_RUNS / 4))),
      );
    },
    fuzzTimeoutMs(FUZZ_RUNS),
  );
});
