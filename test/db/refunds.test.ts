import { createRefundsRepository } from '../../src/db/repositories/refunds';
import { testDatabases } from '../../harness/databases';
import { useTestDatabase } from '../support/database-fixture';
import { refundEvent } from '../support/ledger-events';

// The refunds' event ledger: one row per provider event, matched to its order through the
// payment's reference (or the order the event names), kept with no order until that payment.
// How it matches, stamps and stores every field, alike for disputes: event-ledger.test.ts.
describe.each(testDatabases)('refunds repository ($name)', ({ create }) => {
  const database = useTestDatabase(create);
  const refunds = database.repository(createRefundsRepository);
  const { unique } = database;

  it('answers a redelivery of the event (or a retry) with created false and keeps one row', async () => {
    const { orderId, paymentRef: ref } = await database.paidOrder();
    const event = refundEvent(ref);

    const first = await refunds.record(event);
    // The same event ID with other content is still the same event: the first recording stands.
    const again = await refunds.record({ ...event, amount: 9, status: 'failed' });

    expect(first).toEqual({ created: true, orderId });
    expect(again).toEqual({ created: false, orderId });
    expect(await refunds.forOrder(orderId)).toEqual([
      { kind: 'refund', refundId: event.refundId, amount: 1_200, status: 'succeeded' },
    ]);
  });

  it('keeps a refund that comes before its payment with no order; the payment then claims it', async () => {
    const { id: orderId } = await database.newOrder();
    const ref = unique('stripe~pi');
    const early = refundEvent(ref, {
      kind: 'cumulative',
      refundId: undefined,
      currency: undefined,
    });

    expect(await refunds.record(early)).toEqual({ created: true, orderId: null });
    expect(await database.eventRow('refunds', early.eventId)).toMatchObject({
      order_id: null,
      refund_id: null,
      currency: null,
    });
    expect(await refunds.forOrder(orderId)).toEqual([]);

    await database.pay(orderId, { paymentRef: ref });
    expect(await refunds.forOrder(orderId)).toEqual([
      { kind: 'cumulative', refundId: null, amount: 1_200, status: 'succeeded' },
    ]);
    // A redelivery after the claim reads the order the payment gave it.
    expect(await refunds.record(early)).toEqual({ created: false, orderId });
  });

  it("lists an order's refund events oldest first, and only its own", async () => {
    const { orderId, paymentRef: ref } = await database.paidOrder();
    const { orderId: other } = await database.paidOrder();
    const events = [
      refundEvent(ref, { refundId: 're_a', amount: 100, status: 'pending' }),
      refundEvent(ref, { refundId: 're_a', amount: 100, status: 'succeeded' }),
      refundEvent(ref, { kind: 'cumulative', refundId: undefined, amount: 300 }),
      refundEvent(ref, { refundId: 're_b', amount: 200, status: 'canceled' }),
    ];
    for (const event of events) await refunds.record(event);

    expect(await refunds.forOrder(orderId)).toEqual([
      { kind: 'refund', refundId: 're_a', amount: 100, status: 'pending' },
      { kind: 'refund', refundId: 're_a', amount: 100, status: 'succeeded' },
      { kind: 'cumulative', refundId: null, amount: 300, status: 'succeeded' },
      { kind: 'refund', refundId: 're_b', amount: 200, status: 'canceled' },
    ]);
    expect(await refunds.forOrder(other)).toEqual([]);
    expect((await refunds.forOrder(orderId)).every((r) => typeof r.amount === 'number')).toBe(true);
  });
});
