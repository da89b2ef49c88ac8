import type { RecordUnmatchedInput } from '../../src/db';
import {
  type Actionable,
  deliver,
  type Delivery,
  toDelivery,
} from '../../src/http/providers/delivery';
import type { DisputeEvent, RefundEvent } from '../../src/shared/payment-events';
import type { StripeThinNotification } from '../../src/shared/thin-event';
import { disputeEvent as aDispute, refundEvent as aRefund } from '../support/ledger-events';
import { recordingPaymentStarter, recordingUnmatched } from '../support/webhook';

// What the shop does with a verified, keyed event, read directly: the route's tests reach it
// only through the app, which jest's related-test search does not follow (docs/testing.md). How
// a provider's IDs become keys is test/http/provider.test.ts's.

const shop = { provider: 'acme', shopCurrency: 'eur' };

const payment = (fields: Partial<Extract<Actionable, { kind: 'payment' }>> = {}): Actionable => ({
  kind: 'payment',
  type: 'payment.succeeded',
  eventId: 'acme~evt_1',
  sentId: 'evt_1',
  orderRef: 12,
  amount: 5400,
  paymentRef: 'acme~pi_9',
  ...fields,
});

describe('toDelivery: payments', () => {
  it('starts a payment under its event ID, named by its reference, in its currency', () => {
    expect(toDelivery(payment({ currency: 'eur' }), shop)).toStrictEqual({
      kind: 'payment',
      input: {
        eventId: 'acme~evt_1',
        orderId: 12,
        amount: 5400,
        paymentRef: 'acme~pi_9',
        currency: 'eur',
      },
    });
  });

  it('makes up no currency for a scheme that sends none', () => {
    expect(toDelivery(payment(), shop)).toStrictEqual({
      kind: 'payment',
      input: { eventId: 'acme~evt_1', orderId: 12, amount: 5400, paymentRef: 'acme~pi_9' },
    });
  });

  it.each([
    [
      'for an order reference that is not one of ours',
      { orderRef: 'ORD-12', currency: 'eur' },
      'foreign_order_ref',
      { currency: 'eur', orderRef: 'ORD-12' },
      'the order reference "ORD-12" is not an order ID of this shop',
    ],
    [
      'in another currency, whatever its amount',
      { currency: 'usd' },
      'currency',
      { currency: 'usd', orderId: 12 },
      "the payment is in USD, but this shop's orders are in EUR (SHOP_CURRENCY)",
    ],
  ])('keeps a payment %s as unmatched', (_label, fields, reason, payload, note) => {
    expect(toDelivery(payment(fields), shop)).toStrictEqual({
      kind: 'unmatched',
      entry: {
        reason,
        provider: 'acme',
        eventId: 'acme~evt_1',
        payload: {
          event: 'payment.succeeded',
          eventId: 'acme~evt_1',
          amount: 5400,
          paymentRef: 'acme~pi_9',
          ...payload,
        },
      },
      note,
    });
  });

  it('reads an order reference that only looks like a number as foreign, not as that order', () => {
    // "12" is text: the provider's metadata carried something else than our numeric order ID.
    const delivery = toDelivery(payment({ orderRef: '12' }), shop);
    expect(delivery.kind).toBe('unmatched');
    expect(delivery.kind === 'unmatched' && delivery.entry.reason).toBe('foreign_order_ref');
  });

  it('compares currencies exactly (the providers lowercase them before this)', () => {
    expect(toDelivery(payment({ currency: 'EUR' }), shop).kind).toBe('unmatched');
    expect(toDelivery(payment({ currency: '' }), shop).kind).toBe('unmatched');
  });
});

describe('toDelivery: refunds, disputes, thin events and what the provider found unmatched', () => {
  it('passes a refund and a dispute on as they were keyed', () => {
    const refund = aRefund('acme~pi_9');
    const dispute = aDispute('acme~pi_9');
    const type = 'payment.refunded';
    expect(
      toDelivery({ kind: 'refund', type, eventId: refund.eventId, refund }, shop),
    ).toStrictEqual({ kind: 'refund', event: refund });
    expect(
      toDelivery({ kind: 'dispute', type, eventId: dispute.eventId, dispute }, shop),
    ).toStrictEqual({ kind: 'dispute', event: dispute });
  });

  it('queues a thin event for the fetch of its object, under its event ID', () => {
    const notification = { id: 'evt_1' } as StripeThinNotification;
    const type = 'v1.payment_intent.succeeded';
    expect(
      toDelivery({ kind: 'thin', type, eventId: 'acme~evt_1', notification }, shop),
    ).toStrictEqual({
      kind: 'thin',
      provider: 'acme',
      type,
      input: { eventId: 'acme~evt_1', notification },
    });
  });

  it('keeps what the provider found unmatched with its reason, note, object and ID as sent', () => {
    const object = { id: 'pi_9', livemode: true };
    expect(
      toDelivery(
        {
          kind: 'unmatched',
          type: 'payment_intent.succeeded',
          eventId: 'acme~evt_1',
          sentId: 'evt_1',
          reason: 'livemode',
          note: 'a live-mode event at a test-mode shop',
          object,
        },
        shop,
      ),
    ).toStrictEqual({
      kind: 'unmatched',
      entry: {
        reason: 'livemode',
        provider: 'acme',
        eventId: 'acme~evt_1',
        // The provider's own event ID too, as sent: what an operator finds on its dashboard.
        payload: { event: 'payment_intent.succeeded', id: 'evt_1', object },
      },
      note: 'a live-mode event at a test-mode shop',
    });
  });
});

describe('deliver', () => {
  const refundEvent: RefundEvent = {
    eventId: 'acme~evt_r',
    paymentRef: 'acme~pi_9',
    kind: 'cumulative',
    amount: 300,
    status: 'succeeded',
  };
  const disputeEvent: DisputeEvent = {
    eventId: 'acme~evt_d',
    paymentRef: 'acme~pi_9',
    disputeId: 'dp_1',
    amount: 5400,
    status: 'lost',
  };
  const entry: RecordUnmatchedInput = {
    reason: 'account',
    provider: 'acme',
    eventId: 'acme~evt_u',
    payload: { object: 'acct_other' },
  };

  it('starts each kind with its own start, and only that one', async () => {
    const payments = recordingPaymentStarter();
    const unmatched = recordingUnmatched();
    const deps = { payments, unmatched };
    const input = { eventId: 'acme~evt_p', orderId: 12, amount: 5400, paymentRef: 'acme~pi_9' };

    await expect(deliver({ kind: 'payment', input }, deps)).resolves.toStrictEqual({
      kind: 'started',
      started: { workflowId: 'payment-acme~evt_p', duplicate: false },
    });
    await expect(deliver({ kind: 'refund', event: refundEvent }, deps)).resolves.toStrictEqual({
      kind: 'started',
      started: { workflowId: 'refund-acme~evt_r', duplicate: false },
    });
    await expect(deliver({ kind: 'dispute', event: disputeEvent }, deps)).resolves.toStrictEqual({
      kind: 'started',
      started: { workflowId: 'dispute-acme~evt_d', duplicate: false },
    });
    expect(payments.starts).toEqual([input]);
    expect(payments.refunds).toEqual([refundEvent]);
    expect(payments.disputes).toEqual([disputeEvent]);
    expect(unmatched.entries).toEqual([]);
  });

  it('keeps an unmatched delivery in the inbox, once per event ID, and starts nothing', async () => {
    const payments = recordingPaymentStarter();
    const unmatched = recordingUnmatched();
    const delivery: Delivery = { kind: 'unmatched', entry, note: 'another account' };

    await expect(deliver(delivery, { payments, unmatched })).resolves.toStrictEqual({
      kind: 'unmatched',
      id: 1,
      created: true,
      reason: 'account',
      note: 'another account',
    });
    // The provider's redelivery: the same row, not a second one.
    await expect(deliver(delivery, { payments, unmatched })).resolves.toStrictEqual({
      kind: 'unmatched',
      id: 1,
      created: false,
      reason: 'account',
      note: 'another account',
    });
    expect(unmatched.entries).toEqual([entry]);
    expect([...payments.starts, ...payments.refunds, ...payments.disputes]).toEqual([]);
  });

  it('passes a failed start on to the route (which answers 503), recording nothing', async () => {
    const payments = recordingPaymentStarter();
    const unmatched = recordingUnmatched();
    const outage = new Error('Temporal unavailable');
    payments.startRefund = () => Promise.reject(outage);
    await expect(
      deliver({ kind: 'refund', event: refundEvent }, { payments, unmatched }),
    ).rejects.toBe(outage);
    expect(unmatched.entries).toEqual([]);
  });
  it('starts a thin event’s fetch, or keeps it as unmatched when nothing can fetch it', async () => {
    const notification = { id: 'evt_t', type: 'v1.refund.created' } as StripeThinNotification;
    const delivery: Delivery = {
      kind: 'thin',
      provider: 'stripe',
      type: notification.type,
      input: { eventId: 'stripe~evt_t', notification },
    };
    const fetches: unknown[] = [];
    const thinEvents = {
      start: (input: unknown) => {
        fetches.push(input);
        return Promise.resolve({ workflowId: 'thin-stripe~evt_t', duplicate: false });
      },
    };
    const payments = recordingPaymentStarter();
    const unmatched = recordingUnmatched();
    await expect(deliver(delivery, { payments, unmatched, thinEvents })).resolves.toStrictEqual({
      kind: 'started',
      started: { workflowId: 'thin-stripe~evt_t', duplicate: false },
    });
    expect(fetches).toEqual([delivery.input]);
    expect(unmatched.entries).toEqual([]);

    // No STRIPE_API_KEY: kept for an operator, with what was sent.
    await expect(deliver(delivery, { payments, unmatched })).resolves.toStrictEqual({
      kind: 'unmatched',
      id: 1,
      created: true,
      reason: 'thin_unresolved',
      note: 'a thin event, and no STRIPE_API_KEY to fetch its object with',
    });
    expect(unmatched.entries).toEqual([
      {
        reason: 'thin_unresolved',
        provider: 'stripe',
        eventId: 'stripe~evt_t',
        payload: { event: 'v1.refund.created', notification },
      },
    ]);
  });
});
