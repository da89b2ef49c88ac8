import type { FastifyInstance } from 'fastify';
import {
  createStripeVerifier,
  parseStripeSignature,
} from '../../src/http/providers/stripe-signature';
import {
  STRIPE_WEBHOOK_PATH,
  type StripeBinding,
  stripeProvider,
} from '../../src/http/providers/stripe';
import {
  deliverStripe,
  stripePaymentIntentEvent,
  stripeSignature,
  stripeLibraryAccepts,
  TEST_STRIPE_SECRET,
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

// Stripe's own library signs every delivery here; where it and our endpoint disagree, the
// library is right. Its verifier (constructEvent) is asked too, so each case is the library's
// verdict as well as ours.

const OLD_SECRET = 'whsec_test_stripe_endpoint_secret_old0';

let starter: RecordingPaymentStarter;
let inbox: RecordingUnmatched;
let app: FastifyInstance;

beforeEach(async () => {
  ({ app, starter, inbox } = await recordingWebhookApp({
    STRIPE_WEBHOOK_SECRETS: [TEST_STRIPE_SECRET, OLD_SECRET],
  }));
});
afterEach(() => app.close());

const libraryAccepts = (payload: string, header: string) =>
  stripeLibraryAccepts(payload, header, NOW_S * 1000);

describe('Stripe-Signature, as Stripe signs it', () => {
  it('accepts a payment_intent.succeeded signed by the stripe library and starts payment-stripe~<evt id>', async () => {
    const event = stripePaymentIntentEvent({ id: 'evt_1Lib', orderId: '42', amount: 5400 });
    const payload = JSON.stringify(event, null, 2);
    const header = stripeSignature(payload, { timestamp: NOW_S });
    expect(libraryAccepts(payload, header)).toBe(true);

    const response = await deliverStripe(app, payload, header);
    expectAccepted(response, 'payment-stripe~evt_1Lib');
    expect(starter.starts).toEqual([
      {
        eventId: 'stripe~evt_1Lib',
        orderId: 42,
        amount: 5400,
        currency: 'jpy',
        paymentRef: 'stripe~pi_3Test',
      },
    ]);
  });

  it('accepts a signature up to the 300 s tolerance old, and a later one (the library does too)', async () => {
    for (const timestamp of [NOW_S - 300, NOW_S + 120]) {
      const payload = JSON.stringify(stripePaymentIntentEvent());
      const header = stripeSignature(payload, { timestamp });
      expect(libraryAccepts(payload, header)).toBe(true);
      expect((await deliverStripe(app, payload, header)).statusCode).toBe(200);
    }
  });

  it('refuses an expired signature (301 s old) with a reason, as the library does', async () => {
    const payload = JSON.stringify(stripePaymentIntentEvent());
    const header = stripeSignature(payload, { timestamp: NOW_S - 301 });
    expect(libraryAccepts(payload, header)).toBe(false);
    const response = await deliverStripe(app, payload, header);
    expectRefused(response, 401, 'Stripe-Signature timestamp is older than the 300 s tolerance');
    expect(starter.starts).toEqual([]);
  });

  it('refuses a tampered body, a re-stamped t and a signature under another secret', async () => {
    const payload = JSON.stringify(stripePaymentIntentEvent({ amount: 5400 }));
    const header = stripeSignature(payload, { timestamp: NOW_S });
    const tampered = payload.replace('5400', '5401');
    const restamped = header.replace(`t=${NOW_S}`, `t=${NOW_S + 1}`);
    const otherSecret = stripeSignature(payload, {
      timestamp: NOW_S,
      secret: 'whsec_someone_else',
    });
    const cases: Array<[string, string]> = [
      [tampered, header],
      [payload, restamped],
      [payload, otherSecret],
    ];
    for (const [body, signature] of cases) {
      expect(libraryAccepts(body, signature)).toBe(false);
      const response = await deliverStripe(app, body, signature);
      expectRefused(response, 401, 'invalid signature');
    }
    expect(starter.starts).toEqual([]);
  });

  it('accepts every v1 during a secret roll, and either configured secret', async () => {
    const payload = JSON.stringify(stripePaymentIntentEvent());
    const current = stripeSignature(payload, { timestamp: NOW_S });
    const old = stripeSignature(payload, { timestamp: NOW_S, secret: OLD_SECRET });
    const v1 = (header: string) => header.split(',')[1]!;
    const forged = `v1=${'0'.repeat(64)}`;
    // Stripe's header while both secrets are active: one v1 per secret, in any order.
    for (const header of [
      `t=${NOW_S},${v1(old)},${v1(current)}`,
      `t=${NOW_S},${forged},${v1(current)}`,
      old,
    ]) {
      expect((await deliverStripe(app, payload, header)).statusCode).toBe(200);
    }
    expect(libraryAccepts(payload, `t=${NOW_S},${forged},${v1(current)}`)).toBe(true);
  });

  it('ignores v0 (test-mode) signatures and unknown schemes: a v0 alone is refused', async () => {
    const payload = JSON.stringify(stripePaymentIntentEvent());
    const header = stripeSignature(payload, { timestamp: NOW_S });
    const hex = header.split('v1=')[1]!;
    const withV0 = `${header},v0=${'a'.repeat(64)},v2=zz`;
    expect((await deliverStripe(app, payload, withV0)).statusCode).toBe(200);
    const v0Only = `t=${NOW_S},v0=${hex}`;
    expect(libraryAccepts(payload, v0Only)).toBe(false);
    const response = await deliverStripe(app, payload, v0Only);
    expectRefused(response, 401, 'Stripe-Signature has no v1 signature');
  });

  it.each([
    ['a missing header', undefined, 'missing Stripe-Signature header'],
    ['no timestamp', `v1=${'a'.repeat(64)}`, 'Stripe-Signature has no timestamp (t=)'],
    [
      'two timestamps',
      `t=1,t=2,v1=${'a'.repeat(64)}`,
      'Stripe-Signature has more than one timestamp (t=)',
    ],
    [
      'a timestamp that is not digits',
      `t=1e9,v1=${'a'.repeat(64)}`,
      'Stripe-Signature t= must be a Unix time in seconds',
    ],
    [
      'an empty timestamp',
      `t=,v1=${'a'.repeat(64)}`,
      'Stripe-Signature t= must be a Unix time in seconds',
    ],
    [
      'uppercase hex (the library compares text)',
      `t=${NOW_S},v1=${'A'.repeat(64)}`,
      'invalid signature',
    ],
  ])('refuses %s with 401 and the reason', async (_name, header, reason) => {
    const response = await deliverStripe(app, JSON.stringify(stripePaymentIntentEvent()), header);
    expectRefused(response, 401, reason);
  });

  it('refuses the whole header where Stripe’s library throws: an empty v1, or 64 non-ASCII characters', async () => {
    const payload = JSON.stringify(stripePaymentIntentEvent());
    const header = stripeSignature(payload, { timestamp: NOW_S });
    for (const bad of ['v1=', 'v1', `v1=${'é'.repeat(64)}`]) {
      const withBad = `${header},${bad}`;
      expect(libraryAccepts(payload, withBad)).toBe(false);
      const response = await deliverStripe(app, payload, withBad);
      expectRefused(response, 401, 'Stripe-Signature has a v1 that is no signature');
    }
  });

  it('skips other malformed v1 values as the library does, when a valid one is there', () => {
    const verify = createStripeVerifier({
      secrets: [TEST_STRIPE_SECRET],
      toleranceSeconds: 300,
      now: () => NOW_S * 1000,
    });
    const header = stripeSignature('{}', { timestamp: NOW_S });
    for (const other of ['v1=é', `v1=${'z'.repeat(64)}`, `v1=${'a'.repeat(63)}`]) {
      expect(libraryAccepts('{}', `${header},${other}`)).toBe(true);
      expect(verify(Buffer.from('{}'), ['stripe-signature', `${header},${other}`]).ok).toBe(true);
    }
  });

  it('counts age in whole seconds, as the library does', () => {
    const verify = createStripeVerifier({
      secrets: [TEST_STRIPE_SECRET],
      toleranceSeconds: 300,
      now: () => NOW_S * 1000 + 999,
    });
    const header = stripeSignature('{}', { timestamp: NOW_S - 300 });
    expect(stripeLibraryAccepts('{}', header, NOW_S * 1000 + 999)).toBe(true);
    expect(verify(Buffer.from('{}'), ['stripe-signature', header]).ok).toBe(true);
  });

  it('refuses the right signature in uppercase hex, as the library does (it compares text)', async () => {
    const payload = JSON.stringify(stripePaymentIntentEvent());
    const header = stripeSignature(payload, { timestamp: NOW_S });
    const upper = header.replace(/v1=([0-9a-f]+)/, (_m, hex: string) => `v1=${hex.toUpperCase()}`);
    expect(libraryAccepts(payload, upper)).toBe(false);
    expect((await deliverStripe(app, payload, upper)).statusCode).toBe(401);
  });

  it('refuses the header twice, even when both lines are right', async () => {
    const payload = JSON.stringify(stripePaymentIntentEvent());
    const header = stripeSignature(payload, { timestamp: NOW_S });
    const response = await app.inject({
      method: 'POST',
      url: STRIPE_WEBHOOK_PATH,
      payload,
      headers: { 'stripe-signature': [header, header] },
    });
    expectRefused(response, 401, 'exactly one Stripe-Signature header is allowed');
  });

  it('verifies the raw bytes: the same event re-serialised is refused', async () => {
    const event = stripePaymentIntentEvent();
    const header = stripeSignature(JSON.stringify(event, null, 2), { timestamp: NOW_S });
    expect((await deliverStripe(app, JSON.stringify(event), header)).statusCode).toBe(401);
  });

  it('reads t as the library does: padded digits stand for their value', () => {
    expect(parseStripeSignature(`t=0${NOW_S},v1=${'b'.repeat(64)}`)).toEqual({
      ok: true,
      timestamp: NOW_S,
      signatures: [Buffer.from('b'.repeat(64), 'hex')],
    });
    const payload = '{}';
    const header = stripeSignature(payload, { timestamp: NOW_S }).replace('t=', 't=00');
    const verify = createStripeVerifier({
      secrets: [TEST_STRIPE_SECRET],
      toleranceSeconds: 300,
      now: () => NOW_S * 1000,
    });
    expect(libraryAccepts(payload, header)).toBe(true);
    expect(verify(Buffer.from(payload), ['Stripe-Signature', header])).toEqual({
      ok: true,
      matchedSecret: 'current',
    });
  });

  it('names the secret that verified it: the current one, or one being rolled out', () => {
    const verify = createStripeVerifier({
      secrets: [TEST_STRIPE_SECRET, OLD_SECRET],
      toleranceSeconds: 300,
      now: () => NOW_S * 1000,
    });
    const header = stripeSignature('{}', { timestamp: NOW_S, secret: OLD_SECRET });
    expect(verify(Buffer.from('{}'), ['stripe-signature', header])).toEqual({
      ok: true,
      matchedSecret: 'previous-1',
    });
  });

  it('takes the tolerance it is given', () => {
    const verify = createStripeVerifier({
      secrets: [TEST_STRIPE_SECRET],
      toleranceSeconds: 10,
      now: () => NOW_S * 1000,
    });
    const at = (timestamp: number) =>
      verify(Buffer.from('{}'), ['stripe-signature', stripeSignature('{}', { timestamp })]).ok;
    expect([at(NOW_S - 10), at(NOW_S - 11)]).toEqual([true, false]);
  });
});

describe('Stripe events as payments', () => {
  const deliver = (event: object) => {
    const payload = JSON.stringify(event);
    return deliverStripe(app, payload, stripeSignature(payload, { timestamp: NOW_S }));
  };

  it('maps amount_received, the lowercase currency and metadata.order_id (a string)', async () => {
    const event = stripePaymentIntentEvent({ id: 'evt_map', orderId: '7' });
    event.data.object.amount = 9000;
    event.data.object.amount_received = 4500;
    expect((await deliver(event)).statusCode).toBe(200);
    expect(starter.starts).toEqual([
      {
        eventId: 'stripe~evt_map',
        orderId: 7,
        amount: 4500,
        currency: 'jpy',
        paymentRef: 'stripe~pi_3Test',
      },
    ]);
  });

  it.each([
    'payment_intent.created',
    'charge.succeeded',
    'checkout.session.completed',
    'payment_intent.payment_failed',
    // Names every object has: a lookup of the type among the mapped ones must not find them.
    'constructor',
    'toString',
    'hasOwnProperty',
    '__proto__',
  ])('acknowledges %s and ignores it', async (type) => {
    const response = await deliver(stripePaymentIntentEvent({ type }));
    expect([response.statusCode, response.json()]).toEqual([200, { status: 'ignored' }]);
    expect(response.headers['x-workflow-id']).toBeUndefined();
    expect(starter.starts).toEqual([]);
  });

  it('ignores a PaymentIntent without metadata.order_id: not a payment of this shop', async () => {
    const response = await deliver(stripePaymentIntentEvent({ orderId: null }));
    expect([response.statusCode, response.json()]).toEqual([200, { status: 'ignored' }]);
    expect(starter.starts).toEqual([]);
  });

  it('keeps a payment in another currency than the shop’s as unmatched (200), starting nothing', async () => {
    const response = await deliver(
      stripePaymentIntentEvent({ id: 'evt_usd', currency: 'usd', orderId: '7' }),
    );
    expect([response.statusCode, response.json()]).toEqual([200, { status: 'unmatched' }]);
    expect(starter.starts).toEqual([]);
    expect(inbox.entries).toEqual([
      {
        reason: 'currency',
        provider: 'stripe',
        eventId: 'stripe~evt_usd',
        payload: {
          event: 'payment_intent.succeeded',
          eventId: 'stripe~evt_usd',
          orderId: 7,
          amount: 5400,
          currency: 'usd',
          paymentRef: 'stripe~pi_3Test',
        },
      },
    ]);
  });

  it.each([['ORD-12'], ['-5'], ['99999999999'], ['0'], ['2147483648'], ['12 ']])(
    'keeps a payment for the order reference %j, not one of ours, as unmatched (200)',
    async (orderRef) => {
      const response = await deliver(
        stripePaymentIntentEvent({ id: 'evt_ref', orderId: orderRef }),
      );
      expectKeptUnmatched(
        response,
        { starter, inbox },
        {
          reason: 'foreign_order_ref',
          eventId: 'stripe~evt_ref',
          payload: expect.objectContaining({ orderRef, amount: 5400 }),
        },
      );
    },
  );

  it('keeps an amount no order can have (past the column) as unmatched, not a 400', async () => {
    const response = await deliver(stripePaymentIntentEvent({ amount: 2_147_483_648 }));
    expect([response.statusCode, response.json()]).toEqual([200, { status: 'unmatched' }]);
    expect(inbox.entries).toEqual([expect.objectContaining({ reason: 'amount_mismatch' })]);
  });

  it('takes the currency in either case', async () => {
    expect((await deliver(stripePaymentIntentEvent({ currency: 'JPY' }))).statusCode).toBe(200);
  });

  it.each([
    [
      'a zero amount',
      { amount: 0 },
      'data.object.amount_received: Too small: expected number to be >0',
    ],
    [
      'a currency that is no code',
      { currency: 'yen!' },
      'data.object.currency: must be a three-letter ISO 4217 currency code',
    ],
    [
      'an event ID outside the safe alphabet',
      { id: 'evt/1' },
      'id: must be 1-200 characters of letters, digits and _ . : -',
    ],
  ])('refuses %s with 400 and the field', async (_name, overrides, reason) => {
    const response = await deliver(stripePaymentIntentEvent(overrides));
    expectRefused(response, 400, reason);
    expect(starter.starts).toEqual([]);
    expect(inbox.entries).toEqual([]);
  });

  it('refuses a body that is not an event with 400', async () => {
    expect((await deliver({ object: 'event' })).statusCode).toBe(400);
    const payload = 'not json';
    const response = await deliverStripe(
      app,
      payload,
      stripeSignature(payload, { timestamp: NOW_S }),
    );
    expectRefused(response, 400, 'body is not valid JSON');
  });

  it('answers a redelivery as a duplicate, and the same ID with another amount 409', async () => {
    const event = stripePaymentIntentEvent({ id: 'evt_twice' });
    expect((await deliver(event)).json()).toEqual({ status: 'accepted' });
    expect((await deliver(event)).json()).toEqual({ status: 'accepted' });
    event.data.object.amount_received = 1;
    expect((await deliver(event)).statusCode).toBe(409);
  });
});

describe('the Stripe endpoint without a secret', () => {
  it('is not served (404), nor the Standard Webhooks one: an unconfigured provider authenticates nothing', async () => {
    const { app: bare } = await recordingWebhookApp({});
    const payload = JSON.stringify(stripePaymentIntentEvent());
    const response = await deliverStripe(bare, payload, stripeSignature(payload));
    expectRefused(response, 404, 'no route for POST /api/v1/webhooks/stripe');
    const standard = await bare.inject({
      method: 'POST',
      url: '/api/v1/webhooks/standard',
      payload,
    });
    expect(standard.statusCode).toBe(404);
    await bare.close();
  });
});

describe('the Stripe provider’s reading of an event, by receive()', () => {
  /** What the provider bound to `binding` makes of `event`, signed by Stripe's library. */
  function receive(event: object, binding: StripeBinding = { livemode: false }) {
    const provider = stripeProvider({
      secrets: [TEST_STRIPE_SECRET],
      toleranceSeconds: 300,
      now: () => NOW_S * 1000,
      binding,
    });
    const payload = JSON.stringify(event);
    const signature = stripeSignature(payload, { timestamp: NOW_S });
    return provider.receive(Buffer.from(payload), ['stripe-signature', signature]);
  }

  /** The receipt of an event kept unmatched for `reason`, as an operator reads it. */
  const unmatched = (
    event: { id: string; type: string },
    object: unknown,
    reason: string,
    note: string,
  ) => ({
    ok: true,
    matchedSecret: 'current',
    event: {
      kind: 'unmatched',
      type: event.type,
      eventId: `stripe~${event.id}`,
      sentId: event.id,
      reason,
      note,
      object,
    },
  });

  it('says which mode an event of the other mode was, and which the shop takes', () => {
    const live = { ...stripePaymentIntentEvent({ id: 'evt_live' }), livemode: true };
    expect(receive(live)).toStrictEqual(
      unmatched(
        live,
        live.data.object,
        'livemode',
        'a live-mode event, but this shop takes test-mode events (STRIPE_LIVEMODE)',
      ),
    );
    const test = stripePaymentIntentEvent({ id: 'evt_test' });
    expect(receive(test, { livemode: true })).toStrictEqual(
      unmatched(
        test,
        test.data.object,
        'livemode',
        'a test-mode event, but this shop takes live-mode events (STRIPE_LIVEMODE)',
      ),
    );
  });

  it('names the account an event of another account came from: a connected one, or the platform', () => {
    const binding = { livemode: false, account: 'acct_shop' };
    const connected = { ...stripePaymentIntentEvent({ id: 'evt_acct' }), account: 'acct_other' };
    expect(receive(connected, binding)).toStrictEqual(
      unmatched(
        connected,
        connected.data.object,
        'account',
        'an event of acct_other, but this shop is acct_shop (STRIPE_ACCOUNT_ID)',
      ),
    );
    const platform = stripePaymentIntentEvent({ id: 'evt_platform' });
    expect(receive(platform, binding)).toStrictEqual(
      unmatched(
        platform,
        platform.data.object,
        'account',
        'an event of the platform account, but this shop is acct_shop (STRIPE_ACCOUNT_ID)',
      ),
    );
  });

  it('says why a thin event without a related object is kept: there is nothing to fetch', () => {
    const thin = {
      id: 'evt_thin',
      object: 'v2.core.event',
      type: 'v1.charge.refunded',
      livemode: false,
    };
    expect(receive(thin)).toStrictEqual(
      unmatched(
        thin,
        thin,
        'thin_unresolved',
        'a thin event without a related object: nothing to fetch',
      ),
    );
  });

  it('refuses a body whose `object` is not text: neither a thin event nor a snapshot one', () => {
    const event = { ...stripePaymentIntentEvent({ id: 'evt_obj' }), object: 5 };
    expect(receive(event)).toStrictEqual({
      ok: false,
      status: 400,
      reason: 'object: Invalid input: expected string, received number',
    });
  });
});
