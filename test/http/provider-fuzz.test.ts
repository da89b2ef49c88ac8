import type { FastifyInstance } from 'fastify';
import fc from 'fast-check';
import {
  parseStandardSecret,
  createStandardVerifier,
} from '../../src/http/providers/standard-signature';
import {
  createStripeVerifier,
  parseStripeSignature,
} from '../../src/http/providers/stripe-signature';
import { STANDARD_WEBHOOK_PATH } from '../../src/http/providers/standard-webhooks';
import { STRIPE_WEBHOOK_PATH } from '../../src/http/providers/stripe';
import {
  standardHeaders,
  standardPaymentEvent,
  stripePaymentIntentEvent,
  stripeSignature,
  standardLibraryAccepts,
  stripeLibraryAccepts,
  TEST_STANDARD_SECRET,
  TEST_STRIPE_SECRET,
} from '../support/providers';
import { buildWebhookApp, recordingPaymentStarter } from '../support/webhook';
import { FUZZ_RUNS, fuzzParameters, fuzzTimeoutMs } from './webhook-fuzz-arbitraries';

/*
 * Property-based fuzzing of the Stripe and Standard Webhooks header parsers: hostile header
 * values never throw, never answer 5xx, and are never accepted where the provider's own library
 * refuses them (the library is the reference). `FUZZ_RUNS=20000 npx jest test/http/provider-fuzz`
 * for a full-size run; FUZZ_SEED=<seed> replays a failure.
 */

const NOW_S = 1_700_000_000;
const now = () => NOW_S * 1000;
const BODY = JSON.stringify(stripePaymentIntentEvent({ id: 'evt_fuzz' }));
const GOOD_STRIPE = stripeSignature(BODY, { timestamp: NOW_S });
const GOOD_V1 = GOOD_STRIPE.split('v1=')[1]!;

const stripeVerify = createStripeVerifier({
  secrets: [TEST_STRIPE_SECRET],
  toleranceSeconds: 300,
  now,
});

/** Anything a header value can hold, with the scheme's own characters made frequent. */
const noise = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 80 }),
  fc.string({ unit: fc.constantFrom(...'tv01a=, .-+/_e'.split('')), maxLength: 40 }),
  fc.constantFrom('', ' ', ',', '=', '==', 't', 'v1', 'NaN', '1e9', '-1', '0x10', '\t'),
);

/** Items of a Stripe-Signature header: the real ones, mangled ones, and noise. */
const stripeItem = fc.oneof(
  fc.constant(`t=${NOW_S}`),
  fc.constant(`v1=${GOOD_V1}`),
  fc.integer({ min: -2 * NOW_S, max: 2 * NOW_S }).map((t) => `t=${t}`),
  fc.constantFrom(`t=0${NOW_S}`, `t= ${NOW_S}`, `t=${NOW_S}.0`, `T=${NOW_S}`, `t=${NOW_S - 301}`),
  fc.constantFrom(
    `v1=${GOOD_V1.toUpperCase()}`,
    ` v1=${GOOD_V1}`,
    `v1=${GOOD_V1}=`,
    `v0=${GOOD_V1}`,
  ),
  fc
    .string({
      unit: fc.constantFrom(...'0123456789abcdef'.split('')),
      minLength: 60,
      maxLength: 68,
    })
    .map((h) => `v1=${h}`),
  noise,
  noise.map((v) => `t=${v}`),
  noise.map((v) => `v1=${v}`),
);
const stripeHeader = fc.array(stripeItem, { maxLength: 8 }).map((items) => items.join(','));

const bodyArb = fc.oneof(
  fc.constant(BODY),
  fc.constant(BODY.replace('5400', '5401')),
  fc.string({ maxLength: 200 }),
);

describe('Stripe-Signature under fuzzing', () => {
  it(
    'never throws, and never accepts what Stripe’s library refuses',
    () => {
      fc.assert(
        fc.property(stripeHeader, bodyArb, (header, body) => {
          const result = stripeVerify(Buffer.from(body), ['stripe-signature', header]);
          expect(typeof result.ok).toBe('boolean');
          if (result.ok) expect(stripeLibraryAccepts(body, header.trim(), now())).toBe(true);
          else expect(result.reason.length).toBeGreaterThan(0);
          const parsed = parseStripeSignature(header);
          if (!parsed.ok) expect(parsed.reason).toMatch(/^Stripe-Signature /);
        }),
        fuzzParameters(FUZZ_RUNS),
      );
    },
    fuzzTimeoutMs(FUZZ_RUNS),
  );

  it('accepts every header Stripe’s library generates, whatever the body and time', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 300 }),
        fc.integer({ min: NOW_S - 300, max: NOW_S + 10_000 }),
        (body, timestamp) => {
          const header = stripeSignature(body, { timestamp });
          expect(stripeVerify(Buffer.from(body), ['stripe-signature', header]).ok).toBe(true);
        },
      ),
      fuzzParameters(FUZZ_RUNS),
    );
  });
});

const standardKey = parseStandardSecret(TEST_STANDARD_SECRET);
const standardVerify = createStandardVerifier({
  secrets: [standardKey],
  toleranceSeconds: 300,
  now,
});
const STANDARD_BODY = JSON.stringify(standardPaymentEvent());
const GOOD_STANDARD = standardHeaders(STANDARD_BODY, { id: 'msg_fuzz', timestamp: NOW_S });

/**
 * Header values as a server hands them to the library: HTTP does not count leading or trailing
 * whitespace as part of a field value (RFC 9110, 5.5), and Node strips it.
 */
function asReceived(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, value.trim()]));
}

const idArb = fc.oneof(
  fc.constant('msg_fuzz'),
  fc.constantFrom('msg_fuzz ', 'msg_fuzz2', 'msg/1'),
  noise,
);
const timestampArb = fc.oneof(
  fc.constant(String(NOW_S)),
  fc.integer({ min: NOW_S - 400, max: NOW_S + 400 }).map(String),
  fc.constantFrom(`0${NOW_S}`, `${NOW_S}000`, `${NOW_S}.5`, `+${NOW_S}`, `${NOW_S}abc`, '-1'),
  noise,
);
const signatureEntry = fc.oneof(
  fc.constant(GOOD_STANDARD['webhook-signature']),
  fc.constant(`v1a,${Buffer.alloc(64).toString('base64')}`),
  fc.constantFrom(
    GOOD_STANDARD['webhook-signature'].replace('v1,', 'v2,'),
    GOOD_STANDARD['webhook-signature'].replace('v1,', 'v1,,'),
    `${GOOD_STANDARD['webhook-signature']},extra`,
    'v1,',
    'v1',
  ),
  fc
    .uint8Array({ minLength: 0, maxLength: 70 })
    .map((b) => `v1,${Buffer.from(b).toString('base64')}`),
  noise,
);
const signatureList = fc
  .array(signatureEntry, { maxLength: 5 })
  .chain((entries) => fc.constantFrom(' ', '  ').map((sep) => entries.join(sep)));

describe('Standard Webhooks headers under fuzzing', () => {
  it(
    'never throw, and are never accepted where the reference library refuses them',
    () => {
      fc.assert(
        fc.property(
          fc.option(idArb, { nil: undefined }),
          fc.option(timestampArb, { nil: undefined }),
          fc.option(signatureList, { nil: undefined }),
          fc.oneof(fc.constant(STANDARD_BODY), fc.string({ maxLength: 120 })),
          (id, timestamp, signature, body) => {
            const headers: Record<string, string> = {};
            if (id !== undefined) headers['webhook-id'] = id;
            if (timestamp !== undefined) headers['webhook-timestamp'] = timestamp;
            if (signature !== undefined) headers['webhook-signature'] = signature;
            const result = standardVerify(Buffer.from(body), Object.entries(headers).flat());
            if (result.ok)
              expect(standardLibraryAccepts(body, asReceived(headers), now())).toBe(true);
            else expect(result.reason.length).toBeGreaterThan(0);
          },
        ),
        fuzzParameters(FUZZ_RUNS),
      );
    },
    fuzzTimeoutMs(FUZZ_RUNS),
  );

  it('accept every signature the reference library makes, whatever the id, body and time', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,40}$/),
        fc.string({ maxLength: 300 }),
        fc.integer({ min: NOW_S - 300, max: NOW_S + 300 }),
        (id, body, timestamp) => {
          const headers = standardHeaders(body, { id, timestamp });
          expect(standardVerify(Buffer.from(body), Object.entries(headers).flat())).toMatchObject({
            ok: true,
            id,
          });
        },
      ),
      fuzzParameters(FUZZ_RUNS),
    );
  });
});

describe('the provider endpoints under hostile requests', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await buildWebhookApp({
      payments: recordingPaymentStarter(),
      now,
      config: {
        STRIPE_WEBHOOK_SECRETS: [TEST_STRIPE_SECRET],
        STANDARD_WEBHOOK_SECRETS: [TEST_STANDARD_SECRET],
        WEBHOOK_AUTH_FAILURE_LIMIT: 0,
        WEBHOOK_BODY_LIMIT_BYTES: 4096,
      },
    });
  });
  afterAll(() => app.close());

  // Header values Node accepts on the wire: no control characters, at most a few KiB.
  const headerValue = fc.oneof(
    stripeHeader,
    signatureList,
    timestampArb,
    fc.string({
      unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)),
      maxLength: 200,
    }),
  );

  it(
    'answer every request with a 2xx or a 4xx with a reason, never a 5xx',
    async () => {
      await fc.assert(
        fc.asyncProperty(
          fc.constantFrom(STRIPE_WEBHOOK_PATH, STANDARD_WEBHOOK_PATH),
          fc.dictionary(
            fc.constantFrom(
              'stripe-signature',
              'webhook-id',
              'webhook-timestamp',
              'webhook-signature',
              'content-type',
            ),
            headerValue,
            { maxKeys: 5 },
          ),
          fc.oneof(bodyArb, fc.constant(STANDARD_BODY), fc.string({ maxLength: 5000 })),
          async (url, headers, payload) => {
            const response = await app.inject({ method: 'POST', url, payload, headers });
            expect(response.statusCode).toBeGreaterThanOrEqual(200);
            expect(response.statusCode).toBeLessThan(500);
            if (response.statusCode >= 400) {
              expect(typeof response.json<{ error?: unknown }>().error).toBe('string');
            }
          },
        ),
        fuzzParameters(Math.max(1, Math.floor(FUZZ_RUNS / 2))),
      );
    },
    fuzzTimeoutMs(FUZZ_RUNS, 10),
  );
});
