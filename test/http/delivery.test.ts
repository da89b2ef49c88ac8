import type { RecordUnmatchedInput } from '../../src/db';
import {
  type Actionable,
  deliver,
  type Delivery,
  type DeliveryContext,
  toDelivery,
} from '../../src/http/providers/delivery';
import type { DisputeEvent, RefundEvent } from '../../src/shared/payment-events';
import { recordingPaymentStarter, recordingUnmatched } from '../support/webhook';

// The mapping of a verified notification to what the shop does with it, read directly: the
// route's tests reach it only through the app, which jest's related-test search does not follow
// (docs/testing.md). Event IDs and payment references are qualified differently here, so that a
// test sees which of the two each field went through.

const context: DeliveryContext = {
  provider: {
    name: 'acme',
    qualifyEventId: (id) => `event~${id}`,
    qualifyPaymentRef: (ref) => `ref~${ref}`,
  },
  providerEventId: 'evt_1',
  shopCurrency: 'eur',
};

const payment = (fields: Partial<Extract<Actionable, { kind: 'payment' }>> = {}): Actionable => ({
  kind: 'payment',
  event: 'payment.succeeded',
  eventId: 'evt_1',
  orderRef: 12,
  amount: 5400,
  ...fields,
});

describe('toDelivery: payments', () => {
  it('starts a payment under the qualified event ID, named by its qualified reference', () => {
    expect(toDelivery(payment({ currency: 'eur', paymentRef: 'pi_9' }), context)).toStrictEqual({
      kind: 'payment',
      input: {
        eventId: 'event~evt_1',
        orderId: 12,
        amount: 5400,
        paymentRef: 'ref~pi_9',
        currency: 'eur',
      },
    });
  });

  it('names the payment by the event’s own ID when the provider gives no reference', () => {
    // The contract's scheme: no currency either, and none is made up.
    expect(toDelivery(payment(), context)).toStrictEqual({
      kind: 'payment',
      input: { eventId: 'event~evt_1', orderId: 12, amount: 5400, paymentRef: 'ref~evt_1' },
    });
  });

  it('keeps a payment for an order reference that is not one of ours as unmatched', () => {
    const delivery = toDelivery(payment({ orderRef: 'ORD-12', currency: 'eur' }), context);
    expect(delivery).toStrictEqual({
      kind: 'unmatched',
      entry: {
        reason: 'foreign_order_ref',
        provider: 'acme',
        eventId: 'event~evt_1',
        payload: {
          event: 'payment.succeeded',
          eventId: 'event~evt_1',
          amount: 5400,
          currency: 'eur',
          paymentRef: 'ref~evt_1',
          orderRef: 'ORD-12',
        },
      },
      note: 'the order reference "ORD-12" is not an order ID of this shop',
    });
  });

  it('reads an order reference that only looks like a number as foreign, not as that order', () => {
    // "12" is text: the provider's metadata carried something else than our numeric order ID.
    const delivery = toDelivery(payment({ orderRef: '12' }), context);
    expect(delivery.kind).toBe('unmatched');
    expect(delivery.kind === 'unmatched' && delivery.entry.reason).toBe('foreign_order_ref');
  });

  it('keeps a payment in another currency as unmatched, whatever its amount', () => {
    const delivery = toDelivery(payment({ currency: 'usd', paymentRef: 'pi_9' }), context);
    expect(delivery).toStrictEqual({
      kind: 'unmatched',
      entry: {
        reason: 'currency',
        provider: 'acme',
        eventId: 'event~evt_1',
        payload: {
          event: 'payment.succeeded',
          eventId: 'event~evt_1',
          amount: 5400,
          currency: 'usd',
          paymentRef: 'ref~pi_9',
          orderId: 12,
        },
      },
      note: "the payment is in USD, but this shop's orders are in EUR (SHOP_CURRENCY)",
    });
  });

  it('compares currencies exactly (the providers lowercase them before this)', () => {
    expect(toDelivery(payment({ currency: 'EUR' }), context).kind).toBe('unmatched');
    expect(toDelivery(payment({ currency: '' }), context).kind).toBe('unmatched');
  });
});

describe('toDelivery: refunds, disputes and what the provider already found unmatched', () => {
  it('keys a refund by the qualified event ID and names its payment by the qualified reference', () => {
    const refund: Omit<RefundEvent, 'eventId' | 'paymentRef'> = {
      kind: 'refund',
      refundId: 're_1',
      amount: 300,
      currency: 'eur',
      status: 'succeeded',
      orderId: 12,
    };
    expect(
      toDelivery({ kind: 'refund', event: 'charge.refunded', paymentRef: 'pi_9', refund }, context),
    ).toStrictEqual({
      kind: 'refund',
      event: { ...refund, eventId: 'event~evt_1', paymentRef: 'ref~pi_9' },
    });
  });

  it('keys a dispute the same way', () => {
    const dispute: Omit<DisputeEvent, 'eventId' | 'paymentRef'> = {
      disputeId: 'dp_1',
      amount: 5400,
      status: 'opened',
      evidenceDueBy: '2026-12-10T00:00:00.000Z',
      reason: 'fraudulent',
    };
    expect(
      toDelivery(
        { kind: 'dispute', event: 'charge.dispute.created', paymentRef: 'pi_9', dispute },
        context,
      ),
    ).toStrictEqual({
      kind: 'dispute',
      event: { ...dispute, eventId: 'event~evt_1', paymentRef: 'ref~pi_9' },
    });
  });

  it('keeps what the provider found unmatched with its reason, note and object', () => {
    const object = { id: 'pi_9', livemode: true };
    expect(
      toDelivery(
        {
          kind: 'unmatched',
          event: 'payment_intent.succeeded',
          reason: 'livemode',
          note: 'a live-mode event at a test-mode shop',
          object,
        },
        context,
      ),
    ).toStrictEqual({
      kind: 'unmatched',
      entry: {
        reason: 'livemode',
        provider: 'acme',
        eventId: 'event~evt_1',
        // The provider's own event ID too, as sent: what an operator finds on its dashboard.
        payload: { event: 'payment_intent.succeeded', providerEventId: 'evt_1', object },
      },
      note: 'a live-mode event at a test-mode shop',
    });
  });
});

describe('deliver', () => {
  const refundEvent: RefundEvent = {
    eventId: 'event~evt_r',
    paymentRef: 'ref~pi_9',
    kind: 'cumulative',
    amount: 300,
    status: 'succeeded',
  };
  const disputeEvent: DisputeEvent = {
    eventId: 'event~evt_d',
    paymentRef: 'ref~pi_9',
    disputeId: 'dp_1',
    amount: 5400,
    status: 'lost',
  };
  const entry: RecordUnmatchedInput = {
    reason: 'account',
    provider: 'acme',
    eventId: 'event~evt_u',
    payload: { object: 'acct_other' },
  };

  it('starts each kind with its own start, and only that one', async () => {
    const payments = recordingPaymentStarter();
    const unmatched = recordingUnmatched();
    const deps = { payments, unmatched };
    const input = { eventId: 'event~evt_p', orderId: 12, amount: 5400, paymentRef: 'ref~pi_9' };

    await expect(deliver({ kind: 'payment', input }, deps)).resolves.toStrictEqual({
      kind: 'started',
      started: { workflowId: 'payment-event~evt_p', duplicate: false },
    });
    await expect(deliver({ kind: 'refund', event: refundEvent }, deps)).resolves.toStrictEqual({
      kind: 'started',
      started: { workflowId: 'refund-event~evt_r', duplicate: false },
    });
    await expect(deliver({ kind: 'dispute', event: disputeEvent }, deps)).resolves.toStrictEqual({
      kind: 'started',
      started: { workflowId: 'dispute-event~evt_d', duplicate: false },
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
    });
    // The provider's redelivery: the same row, not a second one.
    await expect(deliver(delivery, { payments, unmatched })).resolves.toStrictEqual({
      kind: 'unmatched',
      id: 1,
      created: false,
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
});
