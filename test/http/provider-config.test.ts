import { generateKeyPairSync } from 'node:crypto';
import {
  ConfigError,
  DEV_STANDARD_WEBHOOK_SECRET,
  DEV_STRIPE_WEBHOOK_SECRET,
  loadConfig,
} from '../../src/config';
import { configuredProviders } from '../../src/http/providers';
import { originalProvider } from '../../src/http/providers/original';
import { firstMatchingKey } from '../../src/http/providers/provider';
import { signBody } from '../../src/http/signature';
import { SIGNATURE_HEADER } from '../../src/http/webhook-auth';
import {
  standardHeaders,
  standardPaymentEvent,
  stripePaymentIntentEvent,
  stripeSignature,
  TEST_STANDARD_SECRET,
  TEST_STRIPE_SECRET,
} from '../support/providers';
import { PRODUCTION_ENV } from '../support/production-env';

const publicKey = `whpk_${Buffer.from(
  generateKeyPairSync('ed25519').publicKey.export({ format: 'jwk' }).x!,
  'base64url',
).toString('base64')}`;

function problems(env: NodeJS.ProcessEnv): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    return error.problems;
  }
}

describe('provider settings', () => {
  it('serves Stripe and Standard Webhooks on public dev secrets in development, in yen', () => {
    const config = loadConfig({});
    expect(config.STRIPE_WEBHOOK_SECRETS).toEqual([DEV_STRIPE_WEBHOOK_SECRET]);
    expect(config.STANDARD_WEBHOOK_SECRETS).toEqual([DEV_STANDARD_WEBHOOK_SECRET]);
    expect(config.STANDARD_WEBHOOK_PUBLIC_KEYS).toEqual([]);
    expect(config.STRIPE_WEBHOOK_TOLERANCE_SECONDS).toBe(300);
    expect(config.STANDARD_WEBHOOK_TOLERANCE_SECONDS).toBe(300);
    expect(config.SHOP_CURRENCY).toBe('jpy');
  });

  it('serves neither in production unless configured', () => {
    const config = loadConfig(PRODUCTION_ENV);
    expect([config.STRIPE_WEBHOOK_SECRETS, config.STANDARD_WEBHOOK_SECRETS]).toEqual([[], []]);
  });

  it('takes comma-separated secrets, current first, and the shop currency in either case', () => {
    const config = loadConfig({
      ...PRODUCTION_ENV,
      STRIPE_WEBHOOK_SECRETS: ` ${TEST_STRIPE_SECRET} , whsec_the_one_being_rolled_out_01 `,
      STANDARD_WEBHOOK_SECRETS: TEST_STANDARD_SECRET,
      STANDARD_WEBHOOK_PUBLIC_KEYS: publicKey,
      SHOP_CURRENCY: 'EUR',
    });
    expect(config.STRIPE_WEBHOOK_SECRETS).toEqual([
      TEST_STRIPE_SECRET,
      'whsec_the_one_being_rolled_out_01',
    ]);
    expect(config.STANDARD_WEBHOOK_SECRETS).toEqual([TEST_STANDARD_SECRET]);
    expect(config.STANDARD_WEBHOOK_PUBLIC_KEYS).toEqual([publicKey]);
    expect(config.SHOP_CURRENCY).toBe('eur');
  });

  it('binds Stripe to test mode in development and live mode in production, unless told', () => {
    expect(loadConfig({}).STRIPE_LIVEMODE).toBe(false);
    expect(loadConfig(PRODUCTION_ENV).STRIPE_LIVEMODE).toBe(true);
    const told = loadConfig({
      ...PRODUCTION_ENV,
      STRIPE_LIVEMODE: 'false',
      STRIPE_ACCOUNT_ID: 'acct_1Shop',
      STRIPE_API_KEY: 'rk_test_readonly0123',
      STRIPE_API_BASE_URL: 'http://127.0.0.1:12111',
    });
    expect([
      told.STRIPE_LIVEMODE,
      told.STRIPE_ACCOUNT_ID,
      told.STRIPE_API_KEY,
      told.STRIPE_API_BASE_URL,
    ]).toEqual([false, 'acct_1Shop', 'rk_test_readonly0123', 'http://127.0.0.1:12111']);
    expect(loadConfig({}).STRIPE_API_KEY).toBeUndefined();
  });

  it.each([
    [{ STRIPE_LIVEMODE: 'yes' }, 'STRIPE_LIVEMODE: must be true or false'],
    [{ STRIPE_ACCOUNT_ID: 'acct 1' }, 'STRIPE_ACCOUNT_ID: must be a Stripe account ID, acct_…'],
    [
      { STRIPE_API_KEY: 'pk_live_0123456789' },
      'STRIPE_API_KEY: must be a Stripe secret (sk_…) or restricted (rk_…) key, not a publishable or webhook one',
    ],
    [
      { STRIPE_API_KEY: 'whsec_0123456789abcdef' },
      'STRIPE_API_KEY: must be a Stripe secret (sk_…) or restricted (rk_…) key, not a publishable or webhook one',
    ],
    [
      { ...PRODUCTION_ENV, STRIPE_API_KEY: 'sk_test_0123456789ab' },
      'STRIPE_API_KEY: a test-mode key cannot fetch live-mode events: use the live key, or set STRIPE_LIVEMODE=false',
    ],
    [{ STRIPE_API_BASE_URL: 'not a url' }, 'STRIPE_API_BASE_URL: Invalid URL'],
  ])('refuses the Stripe settings %j', (env, problem) => {
    expect(problems(env)).toContain(problem);
  });

  it('needs no dev secret for Standard Webhooks when only public keys are configured', () => {
    const config = loadConfig({ STANDARD_WEBHOOK_PUBLIC_KEYS: publicKey });
    expect(config.STANDARD_WEBHOOK_SECRETS).toEqual([]);
  });

  it.each([
    [
      'an API key given as the Stripe secret',
      { STRIPE_WEBHOOK_SECRETS: 'sk_live_0123456789abcdef' },
      "STRIPE_WEBHOOK_SECRETS: entry 1: must be the endpoint's signing secret, whsec_… (not an API key, sk_…)",
    ],
    [
      'a bare prefix',
      { STRIPE_WEBHOOK_SECRETS: `${TEST_STRIPE_SECRET},whsec_` },
      "STRIPE_WEBHOOK_SECRETS: entry 2: must be the endpoint's signing secret, whsec_… (not an API key, sk_…)",
    ],
    [
      'a secret listed twice',
      { STRIPE_WEBHOOK_SECRETS: `${TEST_STRIPE_SECRET},${TEST_STRIPE_SECRET}` },
      'STRIPE_WEBHOOK_SECRETS: entry 2: is listed twice',
    ],
    [
      'a Standard secret that is not base64',
      { STANDARD_WEBHOOK_SECRETS: 'whsec_not base64' },
      'STANDARD_WEBHOOK_SECRETS: entry 1: must be whsec_ followed by the base64 of the key (e.g. whsec_MfKQ9r8G…)',
    ],
    [
      'a public key that is no ed25519 key',
      { STANDARD_WEBHOOK_PUBLIC_KEYS: 'whpk_AAAA' },
      'STANDARD_WEBHOOK_PUBLIC_KEYS: entry 1: must be whpk_ followed by the base64 of a 32-byte ed25519 public key',
    ],
    [
      'a tolerance of 0',
      { STRIPE_WEBHOOK_TOLERANCE_SECONDS: '0' },
      'STRIPE_WEBHOOK_TOLERANCE_SECONDS: Too small: expected number to be >=1',
    ],
    [
      'a tolerance over an hour',
      { STANDARD_WEBHOOK_TOLERANCE_SECONDS: '3601' },
      'STANDARD_WEBHOOK_TOLERANCE_SECONDS: must be at most 3600: a wider window lets a leaked request be replayed for longer',
    ],
    [
      'a currency that is no ISO code',
      { SHOP_CURRENCY: 'euro' },
      'SHOP_CURRENCY: must be a three-letter ISO 4217 code (e.g. jpy, eur, usd)',
    ],
  ])('refuses %s, naming the entry and never the value', (_name, env, problem) => {
    const found = problems(env);
    expect(found).toEqual([problem]);
    expect(found.join()).not.toContain(TEST_STRIPE_SECRET);
  });

  it.each([
    [
      'the dev Stripe secret',
      { STRIPE_WEBHOOK_SECRETS: DEV_STRIPE_WEBHOOK_SECRET, SHOP_CURRENCY: 'jpy' },
      'STRIPE_WEBHOOK_SECRETS',
    ],
    [
      'a short Stripe secret',
      { STRIPE_WEBHOOK_SECRETS: 'whsec_short', SHOP_CURRENCY: 'jpy' },
      'STRIPE_WEBHOOK_SECRETS',
    ],
    [
      'the dev Standard secret',
      { STANDARD_WEBHOOK_SECRETS: DEV_STANDARD_WEBHOOK_SECRET, SHOP_CURRENCY: 'jpy' },
      'STANDARD_WEBHOOK_SECRETS',
    ],
    [
      'a Standard key under 16 bytes',
      {
        STANDARD_WEBHOOK_SECRETS: `whsec_${Buffer.alloc(15, 1).toString('base64')}`,
        SHOP_CURRENCY: 'jpy',
      },
      'STANDARD_WEBHOOK_SECRETS',
    ],
    [
      'a Stripe endpoint without SHOP_CURRENCY',
      { STRIPE_WEBHOOK_SECRETS: TEST_STRIPE_SECRET },
      'SHOP_CURRENCY',
    ],
    [
      'a Standard sender without SHOP_CURRENCY',
      { STANDARD_WEBHOOK_PUBLIC_KEYS: publicKey },
      'SHOP_CURRENCY',
    ],
  ])('refuses %s in production', (_name, env, variable) => {
    const found = problems({ ...PRODUCTION_ENV, ...env });
    expect(found).toHaveLength(1);
    expect(found[0]).toMatch(new RegExp(`^${variable}: `));
    expect(problems({ ...env, SHOP_CURRENCY: 'jpy' })).toEqual([]);
  });

  it('accepts real-looking secrets in production', () => {
    expect(
      problems({
        ...PRODUCTION_ENV,
        STRIPE_WEBHOOK_SECRETS: TEST_STRIPE_SECRET,
        STANDARD_WEBHOOK_SECRETS: TEST_STANDARD_SECRET,
        SHOP_CURRENCY: 'usd',
      }),
    ).toEqual([]);
  });
});

describe('configuredProviders', () => {
  const original = { scheme: 'plain', secret: 'contract-secret', toleranceSeconds: 300 } as const;
  const NOW_S = 1_700_000_000;
  const now = () => NOW_S * 1000;
  const served = (config: Parameters<typeof configuredProviders>[1]) =>
    configuredProviders(original, config, now).map((p) => `${p.name} ${p.path}`);

  it('always serves the contract’s provider, then each one configured', () => {
    const contract = 'payment /api/v1/webhooks/payment';
    const stripe = 'stripe /api/v1/webhooks/stripe';
    const standard = 'standard /api/v1/webhooks/standard';
    expect(served({})).toEqual([contract]);
    expect(
      served({
        STRIPE_WEBHOOK_SECRETS: [],
        STANDARD_WEBHOOK_SECRETS: [],
        STANDARD_WEBHOOK_PUBLIC_KEYS: [],
      }),
    ).toEqual([contract]);
    expect(served({ STRIPE_WEBHOOK_SECRETS: [TEST_STRIPE_SECRET] })).toEqual([contract, stripe]);
    expect(served({ STANDARD_WEBHOOK_SECRETS: [TEST_STANDARD_SECRET] })).toEqual([
      contract,
      standard,
    ]);
    expect(served({ STANDARD_WEBHOOK_PUBLIC_KEYS: [publicKey] })).toEqual([contract, standard]);
    expect(
      served({
        STRIPE_WEBHOOK_SECRETS: [TEST_STRIPE_SECRET],
        STANDARD_WEBHOOK_SECRETS: [TEST_STANDARD_SECRET],
        STANDARD_WEBHOOK_PUBLIC_KEYS: [publicKey],
      }),
    ).toEqual([contract, stripe, standard]);
  });

  it('keys the contract’s events bare and the others’ by provider', () => {
    const [contract, stripe, standard] = configuredProviders(
      original,
      {
        STRIPE_WEBHOOK_SECRETS: [TEST_STRIPE_SECRET],
        STANDARD_WEBHOOK_SECRETS: [TEST_STANDARD_SECRET],
      },
      now,
    );
    const contractBody = JSON.stringify({
      id: 'evt_1',
      event: 'payment.succeeded',
      order_id: 3,
      amount: 5400,
    });
    const stripePayment = JSON.stringify(stripePaymentIntentEvent({ id: 'evt_1' }));
    const standardPayment = JSON.stringify(standardPaymentEvent());
    const receipts = [
      contract!.receive(Buffer.from(contractBody), [
        SIGNATURE_HEADER,
        signBody(contractBody, original.secret),
      ]),
      stripe!.receive(Buffer.from(stripePayment), [
        'stripe-signature',
        stripeSignature(stripePayment, { timestamp: NOW_S }),
      ]),
      standard!.receive(
        Buffer.from(standardPayment),
        Object.entries(standardHeaders(standardPayment, { id: 'evt_1', timestamp: NOW_S })).flat(),
      ),
    ];
    expect(receipts.map((r) => r.ok && r.event.kind === 'payment' && r.event.eventId)).toEqual([
      'evt_1',
      'stripe~evt_1',
      'standard~evt_1',
    ]);
  });

  it('gives each scheme its configured tolerance, else its default of 300 s', () => {
    const ok = (config: Parameters<typeof configuredProviders>[1], age: number) =>
      configuredProviders(original, config, now)
        .slice(1)
        .map((provider) => {
          const timestamp = NOW_S - age;
          const headers: Record<string, string> =
            provider.name === 'stripe'
              ? { 'stripe-signature': stripeSignature('{}', { timestamp }) }
              : standardHeaders('{}', { timestamp });
          // Signed: '{}' is then refused for what it says (400), not for its signature (401).
          const receipt = provider.receive(Buffer.from('{}'), Object.entries(headers).flat());
          return !receipt.ok && receipt.status === 400;
        });
    const both = {
      STRIPE_WEBHOOK_SECRETS: [TEST_STRIPE_SECRET],
      STANDARD_WEBHOOK_SECRETS: [TEST_STANDARD_SECRET],
    };
    expect([ok(both, 300), ok(both, 301)]).toEqual([
      [true, true],
      [false, false],
    ]);
    const tight = {
      ...both,
      STRIPE_WEBHOOK_TOLERANCE_SECONDS: 10,
      STANDARD_WEBHOOK_TOLERANCE_SECONDS: 20,
    };
    expect([ok(tight, 10), ok(tight, 11), ok(tight, 20), ok(tight, 21)]).toEqual([
      [true, true],
      [false, true],
      [false, true],
      [false, false],
    ]);
  });
});

describe('firstMatchingKey', () => {
  const a = Buffer.alloc(32, 1);
  const b = Buffer.alloc(32, 2);
  it('names the first key that matches any given value, compared whole', () => {
    expect(firstMatchingKey([a, b], [b])).toBe(1);
    expect(firstMatchingKey([a, a], [a])).toBe(0);
    expect(firstMatchingKey([a, b], [Buffer.alloc(31, 1), Buffer.alloc(32, 3)])).toBe(-1);
    expect(firstMatchingKey([], [a])).toBe(-1);
  });
});

describe('the contract’s provider', () => {
  const provider = originalProvider({ scheme: 'plain', secret: 's', toleranceSeconds: 300 });
  const read = (body: unknown) => {
    const text = JSON.stringify(body);
    const receipt = provider.receive(Buffer.from(text), [SIGNATURE_HEADER, signBody(text, 's')]);
    return receipt.ok ? { success: true, data: receipt.event } : { success: false };
  };

  it('reads payment.succeeded as a payment in the shop’s currency, and any other type as ignored', () => {
    expect(provider.name).toBe('payment');
    expect(
      read({ id: 'evt_1', event: 'payment.succeeded', order_id: 3, amount: 5400 }).data,
    ).toEqual({
      kind: 'payment',
      type: 'payment.succeeded',
      eventId: 'evt_1',
      sentId: 'evt_1',
      orderRef: 3,
      amount: 5400,
      paymentRef: 'evt_1',
    });
    expect(read({ event: 'payment.failed' }).data).toEqual({
      kind: 'ignored',
      type: 'payment.failed',
    });
    expect(read({ id: 'evt_1', event: 'payment.succeeded', order_id: 3 }).success).toBe(false);
  });
});
