import { createDisputesRepository } from '../../src/db/repositories/disputes';
import { testDatabases } from '../../harness/databases';
import { useTestDatabase } from '../support/database-fixture';
import { disputeEvent } from '../support/ledger-events';

// The disputes' event ledger: one row per provider event, matched to its order as a refund is;
// an opening and a closure are separate events, recorded in whatever order they come. How it
// matches, stamps and stores every field, alike for refunds: event-ledger.test.ts.
describe.each(testDatabases)('disputes repository ($name)', ({ create }) => {
  const database = useTestDatabase(create);
  const disputes = database.repository(createDisputesRepository);
  const { unique } = database;

  it('stores the optional fields a provider left out as NULL', async () => {
    const event = disputeEvent(unique('stripe~pi'), {
      currency: undefined,
      evidenceDueBy: undefined,
      reason: undefined,
    });
    await disputes.record(event);
    expect(await database.eventRow('disputes', event.eventId)).toMatchObject({
      currency: null,
      evidence_due_by: null,
      reason: null,
    });
  });

  it('answers a redelivery (or a retry) with created false and keeps the first recording', async () => {
    const { orderId, paymentRef: ref } = await database.paidOrder();
    const event = disputeEvent(ref);

    expect(await disputes.record(event)).toEqual({ created: true, orderId });
    expect(await disputes.record({ ...event, status: 'lost' })).toEqual({
      created: false,
      orderId,
    });
    expect((await disputes.forOrder(orderId)).map((d) => d.status)).toEqual(['opened']);
  });

  it('records a closure that comes before the opening, and both before the payment, for its order', async () => {
    const { id: orderId } = await database.newOrder();
    const ref = unique('stripe~pi');
    const won = disputeEvent(ref, { disputeId: 'dp_any', status: 'won' });
    const opened = disputeEvent(ref, { disputeId: 'dp_any', status: 'opened' });

    expect(await disputes.record(won)).toEqual({ created: true, orderId: null });
    expect(await disputes.record(opened)).toEqual({ created: true, orderId: null });
    expect(await disputes.forOrder(orderId)).toEqual([]);

    // The payment claims both, and learns that it is disputed.
    expect(await database.pay(orderId, { paymentRef: ref })).toMatchObject({
      kind: 'created',
      disputed: true,
    });
    expect((await disputes.forOrder(orderId)).map((d) => [d.disputeId, d.status])).toEqual([
      ['dp_any', 'won'],
      ['dp_any', 'opened'],
    ]);
    expect(await disputes.record(won)).toEqual({ created: false, orderId });
  });

  it("lists an order's dispute events oldest first, with when each was recorded, and only its own", async () => {
    const { orderId, paymentRef: ref } = await database.paidOrder();
    const { orderId: other } = await database.paidOrder();
    await disputes.record(disputeEvent(ref, { disputeId: 'dp_a', status: 'opened' }));
    await disputes.record(disputeEvent(ref, { disputeId: 'dp_b', status: 'opened' }));
    await disputes.record(disputeEvent(ref, { disputeId: 'dp_a', status: 'lost' }));

    const listed = await disputes.forOrder(orderId);
    expect(listed.map((d) => [d.disputeId, d.status])).toEqual([
      ['dp_a', 'opened'],
      ['dp_b', 'opened'],
      ['dp_a', 'lost'],
    ]);
    const times = listed.map((d) => d.recordedAt);
    expect(times).toEqual([...times].sort());
    expect(await disputes.forOrder(other)).toEqual([]);
  });
});
