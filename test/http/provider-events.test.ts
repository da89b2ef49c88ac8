import type { FastifyInstance } from 'fastify';
import { createUnmatchedRepository } from '../../src/db';
import type { StripeThinNotification, ThinEventWorkflowInput } from '../../src/shared/thin-event';
import { TemporalUnavailableError } from '../../src/temporal/payment-starter';
import type { StartedThinEvent, ThinEventStarter } from '../../src/temporal/thin-event-starter';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';
import {
  deliverStandard,
  deliverStripe,
  standardHeaders,
  stripePaymentIntentEvent,
  stripeSignature,
  TEST_STANDARD_SECRET,
  TEST_STRIPE_SECRET,
} from '../support/providers';
import {
  buildWebhookApp,
  deliverWebhook,
  expectAccepted,
  expectKeptUnmatched,
  expectRefused,
  recordingPaymentStarter,
  type RecordingPaymentStarter,
  type RecordingUnmatched,
  recordingWebhookApp,
  WEBHOOK_NOW_S as NOW_S,
} from '../support/webhook';

// Refunds, disputes and what is not ours to act on, as each provider sends them (the shapes of
// docs/webhook-security.md), mapped to the contract's internal events or the unmatched inbox.

let starter: RecordingPaymentStarter;
let inbox: RecordingUnmatched;
let thinStarts: ThinEventWorkflowInput[];
let app: FastifyInstance;

/** A thin event starter that records, as the real one keys: one start per event ID. */
function recordingThinEvents(): ThinEventStarter {
  return {
    start(input): Promise<StartedThinEvent> {
      const duplicate = thinStarts.some((s) => s.eventId === input.eventId);
      thinStarts.push(input);
      return Promise.resolve({ workflowId: `thin-${input.eventId}`, duplicate });
    },
  };
}

async function build(
  config: Record<string, unknown> = {},
  thin: boolean | ThinEventStarter = true,
) {
  thinStarts = [];
  ({ app, starter, inbox } = await recordingWebhookApp(
    {
      STRIPE_WEBHOOK_SECRETS: [TEST_STRIPE_SECRET],
      STANDARD_WEBHOOK_SECRETS: [TEST_STANDARD_SECRET],
      ...config,
    },
    { thinEvents: thin === true ? recordingThinEvents() : thin || undefined },
  ));
}
afterEach(() => app?.close());

/** A snapshot event of any type around `object`, as Stripe sends it. */
function stripeEvent(
  id: string,
  type: string,
  object: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) {
  return { id, object: 'event', type, livemode: false, created: NOW_S, data: { object }, ...extra };
}

const sendStripe = (event: object) => {
  const payload = JSON.stringify(event);
  return deliverStripe(app, payload, stripeSignature(payload, { timestamp: NOW_S }));
};
const sendStandard = (event: object, id: string) => {
  const payload = JSON.stringify(event);
  return deliverStandard(app, payload, standardHeaders(payload, { id, timestamp: NOW_S }));
};

describe('Stripe refunds and disputes', () => {
  beforeEach(() => build());

  it('reads charge.refunded as the payment’s refunded total so far, by its PaymentIntent', async () => {
    const response = await sendStripe(
      stripeEvent('evt_rf1', 'charge.refunded', {
        id: 'ch_1',
        object: 'charge',
        payment_intent: 'pi_1',
        amount: 5400,
        amount_refunded: 2000,
        currency: 'jpy',
        metadata: { order_id: '42' },
      }),
    );
    expectAccepted(response, 'refund-stripe~evt_rf1');
    expect(starter.refunds).toEqual([
      {
        eventId: 'stripe~evt_rf1',
        paymentRef: 'stripe~pi_1',
        kind: 'cumulative',
        amount: 2000,
        currency: 'jpy',
        status: 'succeeded',
        orderId: 42,
      },
    ]);
    expect(starter.starts).toEqual([]);
  });

  it.each([
    ['refund.created', 'succeeded', 'succeeded'],
    ['refund.updated', 'requires_action', 'pending'],
    ['refund.updated', 'failed', 'failed'],
    ['refund.updated', 'canceled', 'canceled'],
  ])('reads %s (status %s) as one refund, %s', async (type, status, expected) => {
    await sendStripe(
      stripeEvent(`evt_${type}_${status}`, type, {
        id: 're_1',
        object: 'refund',
        payment_intent: { id: 'pi_2', object: 'payment_intent' },
        charge: 'ch_2',
        amount: 1500,
        currency: 'jpy',
        status,
        metadata: {},
      }),
    );
    expect(starter.refunds).toEqual([
      {
        eventId: `stripe~evt_${type}_${status}`,
        paymentRef: 'stripe~pi_2',
        kind: 'refund',
        refundId: 're_1',
        amount: 1500,
        currency: 'jpy',
        status: expected,
      },
    ]);
  });

  it('reads charge.dispute.created as opened, with the evidence deadline and reason', async () => {
    const response = await sendStripe(
      stripeEvent('evt_dp1', 'charge.dispute.created', {
        id: 'dp_1',
        object: 'dispute',
        payment_intent: 'pi_3',
        charge: 'ch_3',
        amount: 5400,
        currency: 'jpy',
        status: 'needs_response',
        reason: 'fraudulent',
        evidence_details: { due_by: 1_700_600_000 },
      }),
    );
    expect(response.headers['x-workflow-id']).toBe('dispute-stripe~evt_dp1');
    expect(starter.disputes).toEqual([
      {
        eventId: 'stripe~evt_dp1',
        paymentRef: 'stripe~pi_3',
        disputeId: 'dp_1',
        amount: 5400,
        currency: 'jpy',
        status: 'opened',
        evidenceDueBy: new Date(1_700_600_000 * 1000).toISOString(),
        reason: 'fraudulent',
      },
    ]);
  });

  it.each([
    ['lost', 'lost'],
    ['won', 'won'],
    ['warning_closed', 'won'],
  ])('reads charge.dispute.closed with status %s as %s', async (status, expected) => {
    await sendStripe(
      stripeEvent(`evt_dpc_${status}`, 'charge.dispute.closed', {
        id: 'dp_2',
        payment_intent: 'pi_4',
        amount: 5400,
        currency: 'jpy',
        status,
        evidence_details: { due_by: null },
      }),
    );
    expect(starter.disputes).toEqual([
      expect.objectContaining({ disputeId: 'dp_2', paymentRef: 'stripe~pi_4', status: expected }),
    ]);
    expect(starter.disputes[0]).not.toHaveProperty('evidenceDueBy');
  });

  it('refuses a refund event whose object lacks its amount with 400, naming the field', async () => {
    const response = await sendStripe(
      stripeEvent('evt_bad', 'refund.created', { id: 're_2', currency: 'jpy' }),
    );
    expectRefused(
      response,
      400,
      'data.object.amount: Invalid input: expected number, received undefined',
    );
    expect(starter.refunds).toEqual([]);
  });
});

describe('Stripe events bound to the shop’s mode and account', () => {
  it('keeps a live-mode payment at a test-mode shop as unmatched, never paid', async () => {
    await build();
    const event = { ...stripePaymentIntentEvent({ id: 'evt_live', orderId: '5' }), livemode: true };
    expectKeptUnmatched(
      await sendStripe(event),
      { starter, inbox },
      {
        reason: 'livemode',
        provider: 'stripe',
        eventId: 'stripe~evt_live',
      },
    );
  });

  it('keeps a test-mode refund at a live-mode shop as unmatched', async () => {
    await build({ STRIPE_LIVEMODE: true });
    const response = await sendStripe(
      stripeEvent('evt_testrf', 'charge.refunded', {
        id: 'ch_9',
        payment_intent: 'pi_9',
        amount_refunded: 100,
        currency: 'jpy',
      }),
    );
    expect(response.json()).toEqual({ status: 'unmatched' });
    expect(starter.refunds).toEqual([]);
    expect(inbox.entries).toEqual([expect.objectContaining({ reason: 'livemode' })]);
  });

  it('keeps an event of another account as unmatched, and takes the configured one', async () => {
    await build({ STRIPE_ACCOUNT_ID: 'acct_shop' });
    const foreign = { ...stripePaymentIntentEvent({ id: 'evt_acct1' }), account: 'acct_other' };
    const platform = stripePaymentIntentEvent({ id: 'evt_acct2' });
    const ours = { ...stripePaymentIntentEvent({ id: 'evt_acct3' }), account: 'acct_shop' };
    expect((await sendStripe(foreign)).json()).toEqual({ status: 'unmatched' });
    expect((await sendStripe(platform)).json()).toEqual({ status: 'unmatched' });
    expect((await sendStripe(ours)).json()).toEqual({ status: 'accepted' });
    expect(inbox.entries.map((e) => [e.eventId, e.reason])).toEqual([
      ['stripe~evt_acct1', 'account'],
      ['stripe~evt_acct2', 'account'],
    ]);
    expect(starter.starts.map((s) => s.eventId)).toEqual(['stripe~evt_acct3']);
  });

  it('does not check the account when none is configured', async () => {
    await build();
    const event = { ...stripePaymentIntentEvent({ id: 'evt_any' }), account: 'acct_x' };
    expect((await sendStripe(event)).json()).toEqual({ status: 'accepted' });
  });
});

describe('Stripe thin events', () => {
  const thin = (overrides: Partial<StripeThinNotification> = {}) => ({
    id: 'evt_thin1',
    object: 'v2.core.event',
    type: 'v1.payment_intent.succeeded',
    livemode: false,
    created: '2026-12-01T10:00:00.000Z',
    related_object: { id: 'pi_t1', type: 'payment_intent', url: '/v1/payment_intents/pi_t1' },
    ...overrides,
  });

  it('queues the fetch of its object under thin-<event id>, once per event', async () => {
    await build();
    const response = await sendStripe(thin());
    expectAccepted(response, 'thin-stripe~evt_thin1');
    expect(thinStarts).toEqual([
      {
        eventId: 'stripe~evt_thin1',
        notification: {
          id: 'evt_thin1',
          object: 'v2.core.event',
          type: 'v1.payment_intent.succeeded',
          livemode: false,
          related_object: thin().related_object,
        },
      },
    ]);
    expect(starter.starts).toEqual([]);
  });

  it('keeps it as unmatched (thin_unresolved) without STRIPE_API_KEY to fetch with', async () => {
    await build({}, false);
    const response = await sendStripe(thin({ id: 'evt_thin2' }));
    expect([response.statusCode, response.json()]).toEqual([200, { status: 'unmatched' }]);
    expect(inbox.entries).toEqual([
      expect.objectContaining({ reason: 'thin_unresolved', eventId: 'stripe~evt_thin2' }),
    ]);
  });

  it('binds it to the mode and account (the context) before anything is fetched', async () => {
    await build({ STRIPE_ACCOUNT_ID: 'acct_shop' });
    await sendStripe(thin({ id: 'evt_t3', livemode: true, context: 'acct_shop' }));
    await sendStripe(thin({ id: 'evt_t4', context: 'acct_other' }));
    await sendStripe(thin({ id: 'evt_t5', context: 'acct_shop/sub' }));
    expect(inbox.entries.map((e) => [e.eventId, e.reason])).toEqual([
      ['stripe~evt_t3', 'livemode'],
      ['stripe~evt_t4', 'account'],
    ]);
    expect(thinStarts.map((s) => s.eventId)).toEqual(['stripe~evt_t5']);
  });

  it('ignores a thin event of a type this shop does not act on', async () => {
    await build();
    const response = await sendStripe(thin({ type: 'v1.customer.created' }));
    expect(response.json()).toEqual({ status: 'ignored' });
    // A handled type without the snapshot prefix is no type of a thin event.
    expect((await sendStripe(thin({ type: 'payment_intent.succeeded' }))).json()).toEqual({
      status: 'ignored',
    });
    expect(thinStarts).toEqual([]);
  });

  it('keeps a thin event without a related object as unmatched: nothing to fetch', async () => {
    await build();
    const response = await sendStripe(thin({ id: 'evt_t6', related_object: undefined }));
    expect([response.statusCode, response.json()]).toEqual([200, { status: 'unmatched' }]);
    expect(inbox.entries).toEqual([
      expect.objectContaining({ reason: 'thin_unresolved', eventId: 'stripe~evt_t6' }),
    ]);
    expect(thinStarts).toEqual([]);
  });

  it('keeps the notification itself when there is no key to fetch with, one row per event', async () => {
    await build({}, false);
    const event = thin({ id: 'evt_t7' });
    expect((await sendStripe(event)).json()).toEqual({ status: 'unmatched' });
    // Stripe's redelivery is the same row, not a second one.
    expect((await sendStripe(event)).json()).toEqual({ status: 'unmatched' });
    expect(inbox.entries).toEqual([
      {
        reason: 'thin_unresolved',
        provider: 'stripe',
        eventId: 'stripe~evt_t7',
        // What an operator needs to fetch it by hand once a key is configured.
        payload: {
          event: 'v1.payment_intent.succeeded',
          notification: {
            id: 'evt_t7',
            object: 'v2.core.event',
            type: 'v1.payment_intent.succeeded',
            livemode: false,
            related_object: event.related_object,
          },
        },
      },
    ]);
  });

  it('answers 503 when Temporal does not take the fetch’s start, so Stripe delivers it again', async () => {
    const down = new TemporalUnavailableError(new Error('14 UNAVAILABLE: connection refused'));
    await build({}, { start: () => Promise.reject(down) });
    const response = await sendStripe(thin({ id: 'evt_t8' }));
    expect([response.statusCode, response.headers['retry-after']]).toEqual([503, '5']);
    expect(inbox.entries).toEqual([]);
  });

  it('answers 500 for a failure of ours in the fetch’s start, not a 503 that hides it', async () => {
    await build({}, { start: () => Promise.reject(new TypeError('a bug')) });
    const response = await sendStripe(thin({ id: 'evt_t9' }));
    expect(response.statusCode).toBe(500);
  });
});

describe('Standard Webhooks and the contract’s refunds and disputes', () => {
  beforeEach(() => build());

  it('maps payment.refunded and payment.disputed under data, keyed by webhook-id', async () => {
    await sendStandard(
      {
        type: 'payment.refunded',
        data: { order_id: 7, payment_id: 'pay_1', amount: 500, refund_id: 'rf_1', currency: 'JPY' },
      },
      'msg_rf',
    );
    await sendStandard(
      {
        type: 'payment.disputed',
        data: {
          order_id: 'ORD-7',
          payment_id: 'pay_1',
          amount: 5400,
          dispute_id: 'dp_s1',
          status: 'opened',
          evidence_due_by: '2026-12-20T00:00:00+09:00',
        },
      },
      'msg_dp',
    );
    expect(starter.refunds).toEqual([
      {
        eventId: 'standard~msg_rf',
        paymentRef: 'standard~pay_1',
        kind: 'refund',
        refundId: 'rf_1',
        amount: 500,
        currency: 'jpy',
        status: 'succeeded',
        orderId: 7,
      },
    ]);
    // An order reference that is not one of ours is only a hint here: the payment reference matches.
    expect(starter.disputes).toEqual([
      {
        eventId: 'standard~msg_dp',
        paymentRef: 'standard~pay_1',
        disputeId: 'dp_s1',
        amount: 5400,
        status: 'opened',
        evidenceDueBy: '2026-12-19T15:00:00.000Z',
      },
    ]);
  });

  it('maps the contract’s payment.refunded and payment.disputed, the payment named by its event id', async () => {
    const refunded = await deliverWebhook(app, {
      id: 'evt_c_rf',
      event: 'payment.refunded',
      order_id: 3,
      payment_id: 'evt_c_pay',
      amount: 5400,
      refund_id: 'rf_c1',
    });
    expect([refunded.statusCode, refunded.headers['x-workflow-id']]).toEqual([
      200,
      'refund-evt_c_rf',
    ]);
    await deliverWebhook(app, {
      id: 'evt_c_dp',
      event: 'payment.disputed',
      order_id: 3,
      payment_id: 'evt_c_pay',
      amount: 5400,
      dispute_id: 'dp_c1',
      status: 'lost',
    });
    expect(starter.refunds).toEqual([
      {
        eventId: 'evt_c_rf',
        paymentRef: 'evt_c_pay',
        kind: 'refund',
        refundId: 'rf_c1',
        amount: 5400,
        status: 'succeeded',
        orderId: 3,
      },
    ]);
    expect(starter.disputes).toEqual([
      {
        eventId: 'evt_c_dp',
        paymentRef: 'evt_c_pay',
        disputeId: 'dp_c1',
        amount: 5400,
        status: 'lost',
        orderId: 3,
      },
    ]);
  });

  it('keeps the contract’s 400 for a refund or dispute outside its shape', async () => {
    const cases: Array<[object, string]> = [
      [
        { id: 'e1', event: 'payment.refunded', order_id: 3, amount: 1, refund_id: 'r' },
        'payment_id: Invalid input: expected string, received undefined',
      ],
      [
        {
          id: 'e2',
          event: 'payment.disputed',
          order_id: 3,
          payment_id: 'p',
          amount: 1,
          dispute_id: 'd',
          status: 'pending',
        },
        'status: Invalid option: expected one of "opened"|"won"|"lost"',
      ],
      [
        {
          id: 'e3',
          event: 'payment.refunded',
          order_id: 'ORD-3',
          payment_id: 'p',
          amount: 1,
          refund_id: 'r',
        },
        'order_id: Invalid input: expected number, received string',
      ],
    ];
    for (const [body, error] of cases) {
      const response = await deliverWebhook(app, body);
      expect([response.statusCode, response.json()]).toEqual([400, { error }]);
    }
    expect([...starter.refunds, ...starter.disputes]).toEqual([]);
  });

  it('answers a refund’s redelivery as accepted, starting it once', async () => {
    const body = {
      id: 'evt_c_twice',
      event: 'payment.refunded',
      order_id: 3,
      payment_id: 'evt_c_pay',
      amount: 100,
      refund_id: 'rf_2',
    };
    expect((await deliverWebhook(app, body)).json()).toEqual({ status: 'accepted' });
    expect((await deliverWebhook(app, body)).json()).toEqual({ status: 'accepted' });
    expect(starter.refunds).toHaveLength(2);
  });
});

// The route writes through the real inbox: the record is durable, and a redelivery counts.
describe.each(testDatabases)('an unmatched delivery, recorded ($name)', ({ create }) => {
  let handle: TestDatabaseHandle;
  beforeAll(async () => {
    handle = await create();
  });
  afterAll(() => handle?.close());

  it('is a row of the inbox with its reason, payload and delivery count', async () => {
    const unmatched = createUnmatchedRepository(handle.db);
    app = await buildWebhookApp({
      payments: recordingPaymentStarter(),
      unmatchedRepository: unmatched,
      now: () => NOW_S * 1000,
      config: { STRIPE_WEBHOOK_SECRETS: [TEST_STRIPE_SECRET], SHOP_CURRENCY: 'jpy' },
    });
    const event = stripePaymentIntentEvent({ id: 'evt_db_ref', orderId: 'ORD-12' });
    expect((await sendStripe(event)).json()).toEqual({ status: 'unmatched' });
    expect((await sendStripe(event)).json()).toEqual({ status: 'unmatched' });
    expect(await unmatched.findByEventId('stripe~evt_db_ref')).toMatchObject({
      reason: 'foreign_order_ref',
      provider: 'stripe',
      deliveryCount: 2,
      payload: {
        event: 'payment_intent.succeeded',
        orderRef: 'ORD-12',
        amount: 5400,
        currency: 'jpy',
        paymentRef: 'stripe~pi_3Test',
      },
      resolution: null,
    });
  });
});
