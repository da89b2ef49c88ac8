import { createHash, generateKeyPairSync, sign } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Webhook as SvixWebhook } from 'svix';
import { standardWebhooksProvider } from '../../src/http/providers/standard-webhooks';
import {
  createStandardVerifier,
  parseStandardPublicKey,
  parseStandardSecret,
} from '../../src/http/providers/standard-signature';
import {
  deliverStandard,
  libraryAcceptsAt,
  standardHeaders,
  standardLibraryAccepts,
  standardPaymentEvent,
  TEST_STANDARD_SECRET,
} from '../support/providers';
import {
  expectAccepted,
  expectKeptUnmatched,
  expectRefused,
  type RecordingPaymentStarter,
  type RecordingUnmatched,
  recordingWebhookApp,
  WEBHOOK_NOW_S as NOW_S,
} from '../support/webhook';

// The spec's reference library (`standardwebhooks`) signs every delivery here and gives its own
// verdict; where it and our endpoint disagree, the library is right. `v1a` (ed25519), which the
// library does not implement, is signed with node:crypto as the spec describes it.

const OLD_SECRET = `whsec_${Buffer.from('the-secret-being-rotated-out').toString('base64')}`;
const { publicKey, privateKey } = generateKeyPairSync('ed25519');
const PUBLIC_KEY = `whpk_${Buffer.from(publicKey.export({ format: 'jwk' }).x!, 'base64url').toString('base64')}`;

let starter: RecordingPaymentStarter;
let inbox: RecordingUnmatched;
let app: FastifyInstance;

async function build(config: Record<string, unknown>) {
  ({ app, starter, inbox } = await recordingWebhookApp(config));
}

beforeEach(() =>
  build({
    STANDARD_WEBHOOK_SECRETS: [TEST_STANDARD_SECRET, OLD_SECRET],
    STANDARD_WEBHOOK_PUBLIC_KEYS: [PUBLIC_KEY],
  }),
);
afterEach(() => app.close());

const libraryAccepts = (payload: string, headers: Record<string, string>) =>
  standardLibraryAccepts(payload, headers, NOW_S * 1000);

const signed = (payload: string, options: Parameters<typeof standardHeaders>[1] = {}) =>
  standardHeaders(payload, { timestamp: NOW_S, ...options });

/** Our verifier alone, built from these keys and asked at `nowMs`: its verdict on a delivery. */
function verifierFor(keys: { secrets?: string[]; publicKeys?: string[] }, nowMs = NOW_S * 1000) {
  const verify = createStandardVerifier({
    secrets: (keys.secrets ?? []).map((secret) => parseStandardSecret(secret)),
    publicKeys: (keys.publicKeys ?? []).map((key) => parseStandardPublicKey(key)),
    toleranceSeconds: 300,
    now: () => nowMs,
  });
  return (payload: string, headers: Record<string, string>) =>
    verify(Buffer.from(payload), Object.entries(headers).flat());
}

/** The verifier's verdict on a delivery it takes: the key that matched, the ID it keys. */
const verified = (matchedSecret: string, id: string) => ({ ok: true, matchedSecret, id });

/** A v1a signature of the spec: ed25519 over `<id>.<timestamp>.<body>`, base64. */
function v1a(id: string, timestamp: number, payload: string, key = privateKey): string {
  return `v1a,${sign(null, Buffer.from(`${id}.${timestamp}.${payload}`), key).toString('base64')}`;
}

describe('Standard Webhooks signatures, as the reference library signs them', () => {
  it('accepts a payment signed by the library and starts payment-standard~<webhook-id>', async () => {
    const payload = JSON.stringify(standardPaymentEvent({ order_id: 42, amount: 5400 }));
    const headers = signed(payload, { id: 'msg_2Lib' });
    expect(libraryAccepts(payload, headers)).toBe(true);
    const response = await deliverStandard(app, payload, headers);
    expectAccepted(response, 'payment-standard~msg_2Lib');
    expect(starter.starts).toEqual([
      {
        eventId: 'standard~msg_2Lib',
        orderId: 42,
        amount: 5400,
        currency: 'jpy',
        paymentRef: 'standard~msg_2Lib',
      },
    ]);
  });

  it('accepts timestamps up to five minutes either way, and refuses beyond, as the library does', async () => {
    for (const [timestamp, accepted] of [
      [NOW_S - 300, true],
      [NOW_S + 300, true],
      [NOW_S - 301, false],
      [NOW_S + 301, false],
    ] as const) {
      const payload = JSON.stringify(standardPaymentEvent());
      const headers = signed(payload, { timestamp });
      expect(libraryAccepts(payload, headers)).toBe(accepted);
      const response = await deliverStandard(app, payload, headers);
      expect(response.statusCode).toBe(accepted ? 200 : 401);
      if (!accepted) {
        expect(response.json()).toEqual({
          error: 'webhook-timestamp is outside the 300 s tolerance window',
        });
      }
    }
  });

  it('refuses a tampered body, id or timestamp, and a signature under another secret', async () => {
    const payload = JSON.stringify(standardPaymentEvent());
    const headers = signed(payload, { id: 'msg_tamper' });
    const other = `whsec_${Buffer.from('somebody-else-entirely').toString('base64')}`;
    const cases: Array<[string, Record<string, string>]> = [
      [payload.replace('5400', '5401'), headers],
      [payload, { ...headers, 'webhook-id': 'msg_tamper2' }],
      [payload, { ...headers, 'webhook-timestamp': String(NOW_S - 1) }],
      [payload, signed(payload, { secret: other })],
    ];
    for (const [body, h] of cases) {
      expect(libraryAccepts(body, h)).toBe(false);
      const response = await deliverStandard(app, body, h);
      expectRefused(response, 401, 'invalid signature');
    }
    expect(starter.starts).toEqual([]);
  });

  it('accepts any one valid signature of several (a rotation), under either configured secret', async () => {
    const payload = JSON.stringify(standardPaymentEvent());
    const headers = signed(payload, { id: 'msg_rot' });
    const old = signed(payload, { id: 'msg_rot', secret: OLD_SECRET })['webhook-signature'];
    const forged = `v1,${Buffer.alloc(32).toString('base64')}`;
    for (const list of [
      `${forged} ${headers['webhook-signature']}`,
      `${old} ${forged}`,
      `v2,abc ${headers['webhook-signature']}`,
    ]) {
      const h = { ...headers, 'webhook-signature': list };
      expect((await deliverStandard(app, payload, h)).statusCode).toBe(200);
    }
    expect(
      libraryAccepts(payload, {
        ...headers,
        'webhook-signature': `${forged} ${headers['webhook-signature']}`,
      }),
    ).toBe(true);
  });

  it('compares the base64 text as the library does: other padding bits are refused', async () => {
    const payload = JSON.stringify(standardPaymentEvent());
    const headers = signed(payload);
    const good = headers['webhook-signature'].slice(3);
    // The 43rd character carries 2 unused bits: another one of its group decodes to the same bytes.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
    const last = alphabet.indexOf(good[42]!);
    const sibling = alphabet[(last & ~3) | ((last + 1) & 3)]!;
    const variant = `v1,${good.slice(0, 42)}${sibling}=`;
    expect(Buffer.from(variant.slice(3), 'base64')).toEqual(Buffer.from(good, 'base64'));
    const h = { ...headers, 'webhook-signature': variant };
    expect(libraryAccepts(payload, h)).toBe(false);
    expect((await deliverStandard(app, payload, h)).statusCode).toBe(401);
  });

  it('accepts a v1a (ed25519) signature under the configured public key', async () => {
    const payload = JSON.stringify(standardPaymentEvent());
    const h = { ...signed(payload, { id: 'msg_v1a' }) };
    h['webhook-signature'] =
      `v1,${Buffer.alloc(32).toString('base64')} ${v1a('msg_v1a', NOW_S, payload)}`;
    expect((await deliverStandard(app, payload, h)).statusCode).toBe(200);
    expect(verifierFor({ publicKeys: [PUBLIC_KEY] })(payload, h)).toEqual(
      verified('public key current', 'msg_v1a'),
    );
  });

  it('refuses a v1a under another key, over another body, or with no public key configured', async () => {
    const payload = JSON.stringify(standardPaymentEvent());
    const other = generateKeyPairSync('ed25519').privateKey;
    const base = signed(payload, { id: 'msg_v1a_bad' });
    for (const signature of [
      v1a('msg_v1a_bad', NOW_S, payload, other),
      v1a('msg_v1a_bad', NOW_S, `${payload} `),
    ]) {
      const response = await deliverStandard(app, payload, {
        ...base,
        'webhook-signature': signature,
      });
      expectRefused(response, 401, 'invalid signature');
    }
    await app.close();
    await build({ STANDARD_WEBHOOK_SECRETS: [TEST_STANDARD_SECRET] });
    const response = await deliverStandard(app, payload, {
      ...base,
      'webhook-signature': v1a('msg_v1a_bad', NOW_S, payload),
    });
    expect(response.statusCode).toBe(401);
  });

  it('matches no v1a when built without public keys', () => {
    const payload = '{}';
    const headers = {
      ...signed(payload, { id: 'msg_nokeys' }),
      'webhook-signature': v1a('msg_nokeys', NOW_S, payload),
    };
    expect(verifierFor({ secrets: [TEST_STANDARD_SECRET] })(payload, headers)).toEqual({
      ok: false,
      reason: 'invalid signature',
    });
  });

  it('names the secret that verified it, and counts time in whole seconds', () => {
    const payload = '{}';
    const verify = verifierFor({ secrets: [TEST_STANDARD_SECRET, OLD_SECRET] }, NOW_S * 1000 + 999);
    const headers = signed(payload, { id: 'msg_old', secret: OLD_SECRET, timestamp: NOW_S - 300 });
    expect(standardLibraryAccepts(payload, headers, NOW_S * 1000 + 999, OLD_SECRET)).toBe(true);
    expect(verify(payload, headers)).toEqual(verified('previous-1', 'msg_old'));
  });

  it('takes a v1a signature only under the v1a version, and names the v1 secret first', () => {
    const payload = '{}';
    const base = signed(payload, { id: 'msg_both' });
    const verify = verifierFor({ secrets: [TEST_STANDARD_SECRET], publicKeys: [PUBLIC_KEY] });
    const check = (signature: string) =>
      verify(payload, { ...base, 'webhook-signature': signature });
    const ed25519 = v1a('msg_both', NOW_S, payload);
    expect(check(ed25519.replace('v1a,', 'v2,'))).toEqual({
      ok: false,
      reason: 'webhook-signature has no v1 or v1a signature',
    });
    expect(check(`${base['webhook-signature']} ${ed25519}`)).toMatchObject({
      ok: true,
      matchedSecret: 'current',
    });
    // Entries without a signature (a bare version, doubled spaces) are skipped, not fatal.
    expect(check(`v1  v1a ${base['webhook-signature']}`)).toMatchObject({ ok: true });
  });

  it('serves the endpoint with public keys alone', async () => {
    await app.close();
    await build({ STANDARD_WEBHOOK_PUBLIC_KEYS: [PUBLIC_KEY] });
    const payload = JSON.stringify(standardPaymentEvent());
    const h = {
      ...signed(payload, { id: 'msg_pk' }),
      'webhook-signature': v1a('msg_pk', NOW_S, payload),
    };
    expect((await deliverStandard(app, payload, h)).statusCode).toBe(200);
  });

  it.each([
    ['no webhook-id', { 'webhook-id': undefined }, 'missing webhook-id header'],
    [
      'no webhook-timestamp',
      { 'webhook-timestamp': undefined },
      'missing webhook-timestamp header',
    ],
    [
      'no webhook-signature',
      { 'webhook-signature': undefined },
      'missing webhook-signature header',
    ],
    [
      'a timestamp in milliseconds',
      { 'webhook-timestamp': `${NOW_S}000` },
      'webhook-timestamp must be a Unix time in seconds',
    ],
    [
      'a timestamp that is not digits',
      { 'webhook-timestamp': `${NOW_S}.5` },
      'webhook-timestamp must be a Unix time in seconds',
    ],
    [
      'a negative timestamp',
      { 'webhook-timestamp': '-1' },
      'webhook-timestamp must be a Unix time in seconds',
    ],
    [
      'no signature of a known version',
      { 'webhook-signature': 'v2,abc v1b,def' },
      'webhook-signature has no v1 or v1a signature',
    ],
    [
      'a v1a that is not 64 bytes',
      { 'webhook-signature': 'v1a,abc' },
      'webhook-signature has no v1 or v1a signature',
    ],
  ])('refuses %s with 401 and the reason', async (_name, change, reason) => {
    const payload = JSON.stringify(standardPaymentEvent());
    const headers: Record<string, string> = { ...signed(payload) };
    for (const [name, value] of Object.entries(change)) {
      if (value === undefined) delete headers[name];
      else headers[name] = value;
    }
    const response = await deliverStandard(app, payload, headers);
    expectRefused(response, 401, reason);
  });

  it('reads a padded timestamp as its value, as the library does', async () => {
    const payload = JSON.stringify(standardPaymentEvent());
    const headers = { ...signed(payload), 'webhook-timestamp': `00${NOW_S}` };
    expect(libraryAccepts(payload, headers)).toBe(true);
    expect((await deliverStandard(app, payload, headers)).statusCode).toBe(200);
  });

  it('refuses a header sent twice', async () => {
    const payload = JSON.stringify(standardPaymentEvent());
    const headers = signed(payload);
    const id = headers['webhook-id'];
    const response = await app.inject({
      method: 'POST',
      url: '/api/v1/webhooks/standard',
      payload,
      headers: { ...headers, 'webhook-id': [id, id] },
    });
    expectRefused(response, 401, 'exactly one webhook-id header is allowed');
  });
});

describe('Svix-branded headers, as the official svix library signs them', () => {
  /** svix-id / svix-timestamp / svix-signature, as Svix's standard plan sends them. */
  const svixHeaders = (payload: string, id: string, timestamp = NOW_S) => ({
    'svix-id': id,
    'svix-timestamp': String(timestamp),
    'svix-signature': new SvixWebhook(TEST_STANDARD_SECRET).sign(
      id,
      new Date(timestamp * 1000),
      payload,
    ),
  });
  const svixAccepts = (payload: string, headers: Record<string, string>) =>
    libraryAcceptsAt(NOW_S * 1000, () =>
      new SvixWebhook(TEST_STANDARD_SECRET).verify(payload, headers),
    );

  it('accepts a payment signed by svix under its svix- headers, keyed by svix-id', async () => {
    const payload = JSON.stringify(standardPaymentEvent({ order_id: 9 }));
    const headers = svixHeaders(payload, 'msg_svix1');
    expect(svixAccepts(payload, headers)).toBe(true);
    const response = await deliverStandard(app, payload, headers);
    expectAccepted(response);
    expect(starter.starts).toEqual([
      expect.objectContaining({ eventId: 'standard~msg_svix1', orderId: 9 }),
    ]);
  });

  it('refuses what svix refuses: a tampered body, another ID, an old timestamp (401, with the svix- names)', async () => {
    const payload = JSON.stringify(standardPaymentEvent());
    const headers = svixHeaders(payload, 'msg_svix2');
    const cases: Array<[string, Record<string, string>, string]> = [
      [payload.replace('5400', '5401'), headers, 'invalid signature'],
      [payload, { ...headers, 'svix-id': 'msg_other' }, 'invalid signature'],
      [
        payload,
        svixHeaders(payload, 'msg_svix2', NOW_S - 301),
        'svix-timestamp is outside the 300 s tolerance window',
      ],
    ];
    for (const [body, sent, reason] of cases) {
      expect(svixAccepts(body, sent)).toBe(false);
      const response = await deliverStandard(app, body, sent);
      expectRefused(response, 401, reason);
    }
    expect(starter.starts).toEqual([]);
  });

  it('reads the spec’s set whenever webhook-id is there, even beside an svix-id', () => {
    const payload = '{}';
    const headers = { ...signed(payload, { id: 'msg_spec' }), 'svix-id': 'msg_stray' };
    expect(verifierFor({ secrets: [TEST_STANDARD_SECRET] })(payload, headers)).toEqual(
      verified('current', 'msg_spec'),
    );
  });

  it('reads one set of headers, never a mix: webhook-id with svix-signature is missing its signature', async () => {
    const payload = JSON.stringify(standardPaymentEvent());
    const svix = svixHeaders(payload, 'msg_mix');
    const response = await deliverStandard(app, payload, {
      'webhook-id': 'msg_mix',
      'webhook-timestamp': svix['svix-timestamp'],
      'svix-signature': svix['svix-signature'],
    });
    expectRefused(response, 401, 'missing webhook-signature header');
  });
});

describe('Standard Webhooks events as payments', () => {
  const deliver = (event: object, id?: string) => {
    const payload = JSON.stringify(event);
    return deliverStandard(app, payload, signed(payload, { id }));
  };

  it('takes the order ID as a number or as digits, and the currency in either case', async () => {
    expect(
      (await deliver(standardPaymentEvent({ order_id: '12', currency: 'JPY' }), 'msg_a'))
        .statusCode,
    ).toBe(200);
    expect(starter.starts).toEqual([
      {
        eventId: 'standard~msg_a',
        orderId: 12,
        amount: 5400,
        currency: 'jpy',
        paymentRef: 'standard~msg_a',
      },
    ]);
  });

  it('takes the payment reference from payment_id when the sender gives one', async () => {
    await deliver(standardPaymentEvent({ payment_id: 'pay/7+x=' }), 'msg_ref');
    expect(starter.starts).toEqual([
      expect.objectContaining({ eventId: 'standard~msg_ref', paymentRef: 'standard~pay/7+x=' }),
    ]);
  });

  it('acknowledges other event types and ignores them', async () => {
    const response = await deliver(standardPaymentEvent({}, 'payment.failed'));
    expect([response.statusCode, response.json()]).toEqual([200, { status: 'ignored' }]);
    expect(starter.starts).toEqual([]);
  });

  it('keeps a payment in another currency as unmatched (200), starting nothing', async () => {
    const response = await deliver(standardPaymentEvent({ currency: 'eur' }), 'msg_eur');
    expectKeptUnmatched(
      response,
      { starter, inbox },
      {
        reason: 'currency',
        provider: 'standard',
        eventId: 'standard~msg_eur',
      },
    );
  });

  it.each([['ORD-12'], ['-5'], ['99999999999'], [0], [-5], [1.5], [99_999_999_999]])(
    'keeps a payment for the order reference %j, not one of ours, as unmatched (200)',
    async (orderRef) => {
      const response = await deliver(standardPaymentEvent({ order_id: orderRef }), 'msg_ord');
      expectKeptUnmatched(
        response,
        { starter, inbox },
        {
          reason: 'foreign_order_ref',
          eventId: 'standard~msg_ord',
          payload: expect.objectContaining({ orderRef: String(orderRef) }),
        },
      );
    },
  );

  it.each([
    ['no order ID', { order_id: undefined }, 'data.order_id: Invalid input'],
    [
      'a fractional amount',
      { amount: 1.5 },
      'data.amount: Invalid input: expected int, received number',
    ],
    [
      'no currency',
      { currency: undefined },
      'data.currency: Invalid input: expected string, received undefined',
    ],
  ])('refuses %s with 400 and the field', async (_name, data, reason) => {
    const response = await deliver(standardPaymentEvent(data));
    expectRefused(response, 400, reason);
  });

  it.each([['msg/1+a=='], ['a b'], ['id;with,punct'], ['x'.repeat(300)]])(
    'accepts the webhook-id %j (any the spec allows) under a hashed key, the same on every retry',
    async (id) => {
      const first = await deliver(standardPaymentEvent(), id);
      expectAccepted(first);
      const key = `standard~sha256~${createHash('sha256').update(id).digest('hex')}`;
      expect(first.headers['x-workflow-id']).toBe(`payment-${key}`);
      await deliver(standardPaymentEvent(), id);
      // The original ID stays the payment's reference: the row can be found by what the sender sent.
      expect(starter.starts).toEqual([
        expect.objectContaining({ eventId: key, paymentRef: `standard~${id}` }),
        expect.objectContaining({ eventId: key, paymentRef: `standard~${id}` }),
      ]);
    },
  );

  it('dedups on webhook-id: a redelivery is a duplicate, another body under it is 409', async () => {
    const event = standardPaymentEvent();
    expect((await deliver(event, 'msg_same')).json()).toEqual({ status: 'accepted' });
    expect((await deliver(event, 'msg_same')).json()).toEqual({ status: 'accepted' });
    expect((await deliver(standardPaymentEvent({ amount: 1 }), 'msg_same')).statusCode).toBe(409);
    expect(starter.starts).toHaveLength(3);
  });
});

describe('Standard Webhooks keys', () => {
  it('reads a whsec_ secret as its base64 key, with or without the prefix, as the library does', () => {
    const key = parseStandardSecret(TEST_STANDARD_SECRET);
    expect(key.toString()).toBe('test-standard-webhooks-key-0001');
    expect(parseStandardSecret(TEST_STANDARD_SECRET.slice('whsec_'.length))).toEqual(key);
  });

  it.each(['whsec_', 'whsec_not base64!', 'whsec_abc'])('refuses the secret %j', (secret) => {
    expect(() => parseStandardSecret(secret)).toThrow(/whsec_ followed by the base64/);
  });

  it('refuses a public key that is not 32 bytes of base64', () => {
    expect(() => parseStandardPublicKey(`whpk_${Buffer.alloc(31).toString('base64')}`)).toThrow(
      /32-byte ed25519 public key/,
    );
    expect(() => parseStandardPublicKey(PUBLIC_KEY.slice('whpk_'.length))).not.toThrow();
  });
});

describe('the Standard Webhooks provider’s reading of an event, by receive()', () => {
  const provider = standardWebhooksProvider({
    secrets: [parseStandardSecret(TEST_STANDARD_SECRET)],
    toleranceSeconds: 300,
    now: () => NOW_S * 1000,
  });
  /** What the provider makes of `event`, delivered under webhook-id `id`. */
  function receive(event: object, id: string) {
    const payload = JSON.stringify(event);
    return provider.receive(Buffer.from(payload), Object.entries(signed(payload, { id })).flat());
  }
  const accepted = (event: object) => ({ ok: true, matchedSecret: 'current', event });
  const keyed = (id: string) => ({ eventId: `standard~${id}`, sentId: id });

  it('takes an amount of exactly 2147483647, and keeps one past it as unmatched, saying why', () => {
    const largest = standardPaymentEvent({ amount: 2_147_483_647 });
    expect(receive(largest, 'msg_max')).toStrictEqual(
      accepted({
        kind: 'payment',
        type: 'payment.succeeded',
        ...keyed('msg_max'),
        orderRef: 1,
        amount: 2_147_483_647,
        currency: 'jpy',
        paymentRef: 'standard~msg_max',
      }),
    );
    const past = standardPaymentEvent({ amount: 2_147_483_648 });
    expect(receive(past, 'msg_past')).toStrictEqual(
      accepted({
        kind: 'unmatched',
        type: 'payment.succeeded',
        ...keyed('msg_past'),
        reason: 'amount_mismatch',
        note: "amount 2147483648 cannot be an order's (1 to 2147483647 in the smallest unit)",
        object: past.data,
      }),
    );
  });

  // The optional fields are in the event when sent and absent (not undefined) when not.
  it('maps a refund with and without its currency', () => {
    const data = { payment_id: 'pay_1', amount: 500, refund_id: 'rf_1' };
    const refund = (currency?: string) =>
      accepted({
        kind: 'refund',
        type: 'payment.refunded',
        eventId: 'standard~msg_rf',
        refund: {
          kind: 'refund',
          refundId: 'rf_1',
          amount: 500,
          status: 'succeeded',
          ...(currency === undefined ? {} : { currency }),
          eventId: 'standard~msg_rf',
          paymentRef: 'standard~pay_1',
        },
      });
    expect(receive({ type: 'payment.refunded', data }, 'msg_rf')).toStrictEqual(refund());
    expect(
      receive({ type: 'payment.refunded', data: { ...data, currency: 'JPY' } }, 'msg_rf'),
    ).toStrictEqual(refund('jpy'));
  });

  it('maps a dispute with and without its currency and evidence deadline', () => {
    const data = {
      order_id: 7,
      payment_id: 'pay_1',
      amount: 5400,
      dispute_id: 'dp_1',
      status: 'opened',
    };
    const dispute = (extra: object) =>
      accepted({
        kind: 'dispute',
        type: 'payment.disputed',
        eventId: 'standard~msg_dp',
        dispute: {
          disputeId: 'dp_1',
          amount: 5400,
          status: 'opened',
          ...extra,
          orderId: 7,
          eventId: 'standard~msg_dp',
          paymentRef: 'standard~pay_1',
        },
      });
    expect(receive({ type: 'payment.disputed', data }, 'msg_dp')).toStrictEqual(dispute({}));
    const full = { ...data, currency: 'jpy', evidence_due_by: '2026-12-20T00:00:00+09:00' };
    expect(receive({ type: 'payment.disputed', data: full }, 'msg_dp')).toStrictEqual(
      dispute({ currency: 'jpy', evidenceDueBy: '2026-12-19T15:00:00.000Z' }),
    );
  });
});
