import type { Kysely } from 'kysely';
import { createDisputesRepository } from '../../src/db/repositories/disputes';
import type { EventLedger } from '../../src/db/repositories/event-ledger';
import { createRefundsRepository } from '../../src/db/repositories/refunds';
import type { Database } from '../../src/db/schema';
import type { DisputeEvent, RefundEvent } from '../../src/shared/payment-events';
import { testDatabases } from '../../harness/databases';
import { useTestDatabase } from '../support/database-fixture';
import { disputeEvent, refundEvent } from '../support/ledger-events';

// What the refund and dispute ledgers share (src/db/repositories/event-ledger.ts): an event is
// matched to its order through its payment's reference, else the order it names, once and for
// good; and the order workflow chain that finished with it. Each ledger's own reads and orders
// of arrival are tested in refunds.test.ts and disputes.test.ts.
const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

interface LedgerCase {
  ledger: 'refunds' | 'disputes';
  create: (db: Kysely<Database>) => EventLedger<RefundEvent | DisputeEvent, unknown>;
  event: (eventId: string, paymentRef: string, orderId?: number) => RefundEvent | DisputeEvent;
  /** An event with every field, what the ledger's read lists, and the row's own columns. */
  full: {
    event: (paymentRef: string) => RefundEvent | DisputeEvent;
    listed: unknown[];
    stored: Record<string, unknown>;
  };
}

const ledgers: LedgerCase[] = [
  {
    ledger: 'refunds',
    create: createRefundsRepository,
    event: (eventId, paymentRef, orderId) => refundEvent(paymentRef, { eventId, orderId }),
    full: {
      event: (ref) => refundEvent(ref, { refundId: 're_full', amount: 4_999, status: 'pending' }),
      listed: [{ kind: 'refund', refundId: 're_full', amount: 4_999, status: 'pending' }],
      stored: { kind: 'refund', refund_id: 're_full', currency: 'jpy', status: 'pending' },
    },
  },
  {
    ledger: 'disputes',
    create: createDisputesRepository,
    event: (eventId, paymentRef, orderId) => disputeEvent(paymentRef, { eventId, orderId }),
    full: {
      event: (ref) => disputeEvent(ref, { disputeId: 'dp_1', amount: 4_321 }),
      listed: [{ disputeId: 'dp_1', status: 'opened', recordedAt: expect.stringMatching(ISO_UTC) }],
      stored: {
        dispute_id: 'dp_1',
        status: 'opened',
        amount: 4_321,
        currency: 'jpy',
        evidence_due_by: '2026-12-24T00:00:00.000Z',
        reason: 'fraudulent',
      },
    },
  },
];

describe.each(testDatabases)('refund and dispute ledgers ($name)', ({ create }) => {
  const database = useTestDatabase(create);
  const newOrderId = async () => (await database.newOrder()).id;

  describe.each(ledgers)('$ledger', ({ ledger, create: createLedger, event: makeEvent, full }) => {
    const repository = database.repository(createLedger);
    const event = (paymentRef: string, orderId?: number) =>
      makeEvent(database.unique('stripe~evt'), paymentRef, orderId);
    const ref = () => database.unique('stripe~pi');

    it('records an event for a recorded payment once, matched to its order, with every field', async () => {
      const { orderId, paymentRef } = await database.paidOrder();
      const recorded = full.event(paymentRef);

      expect(await repository.record(recorded)).toEqual({ created: true, orderId });
      expect(await repository.forOrder(orderId)).toEqual(full.listed);
      expect(await database.eventRow(ledger, recorded.eventId)).toMatchObject({
        ...full.stored,
        payment_ref: paymentRef,
        order_id: orderId,
        handled_by_chain: null,
      });
    });

    it('keeps only one creator when the same event is recorded by several calls at once', async () => {
      const { orderId, paymentRef } = await database.paidOrder();
      const recorded = event(paymentRef);

      const results = await Promise.all(
        Array.from({ length: 6 }, () => repository.record(recorded)),
      );

      expect(results.filter((r) => r.created)).toHaveLength(1);
      expect(results.every((r) => r.orderId === orderId)).toBe(true);
      expect(await repository.forOrder(orderId)).toHaveLength(1);
    });

    it('matches a redelivery that comes after the payment, when the first recording found none', async () => {
      const orderId = await newOrderId();
      const paymentRef = ref();
      const recorded = event(paymentRef);
      await repository.record(recorded);
      // A payment row written without its claim of parked events (a raw insert, as a payment
      // whose claim was lost would be): only the event's second recording can match it.
      const now = new Date().toISOString();
      await database.handle.db
        .insertInto('payments')
        .values({
          order_id: orderId,
          provider_event_id: database.unique('evt_raw'),
          amount: 5_000,
          provider_payment_ref: paymentRef,
          created_at: now,
          updated_at: now,
        })
        .execute();

      expect(await repository.record(recorded)).toEqual({ created: false, orderId });
      expect(await repository.forOrder(orderId)).toHaveLength(1);
    });

    it("matches by the payment's reference first, then by the order the event names, if it exists", async () => {
      const paidOrder = await newOrderId();
      const namedOrder = await newOrderId();
      const paymentRef = ref();
      await database.pay(paidOrder, { paymentRef });

      // The payment decides, whatever order the metadata names.
      expect(await repository.record(event(paymentRef, namedOrder))).toMatchObject({
        orderId: paidOrder,
      });
      // No payment with the reference: the named order.
      expect(await repository.record(event(ref(), namedOrder))).toEqual({
        created: true,
        orderId: namedOrder,
      });
      // A named order that does not exist: kept with no order (no foreign-key failure).
      expect(await repository.record(event(ref(), 987_654))).toEqual({
        created: true,
        orderId: null,
      });
      expect(await repository.forOrder(namedOrder)).toHaveLength(1);
      expect(await repository.forOrder(paidOrder)).toHaveLength(1);
    });

    it('never moves an event from the order it was matched to', async () => {
      const first = await newOrderId();
      const second = await newOrderId();
      const recorded = event(ref(), first);
      await repository.record(recorded);

      expect(await repository.record({ ...recorded, orderId: second })).toEqual({
        created: false,
        orderId: first,
      });
      expect(await repository.forOrder(second)).toEqual([]);
    });

    it('keeps the first order workflow chain that finished with an event', async () => {
      const recorded = event(ref());
      await repository.record(recorded);

      expect(await repository.handledBy(recorded.eventId)).toBeNull();
      await repository.markHandled(recorded.eventId, 'chain-1');
      await repository.markHandled(recorded.eventId, 'chain-2');
      expect(await repository.handledBy(recorded.eventId)).toBe('chain-1');
      expect(await repository.handledBy('stripe~evt_never_recorded')).toBeUndefined();
      // Marking an event that was never recorded writes nothing (and does not fail).
      await repository.markHandled('stripe~evt_never_recorded', 'chain-1');
      expect(await repository.handledBy('stripe~evt_never_recorded')).toBeUndefined();
      // Only that event's row: no other row of the ledger was stamped.
      const stamped = await database.handle.db
        .selectFrom(ledger)
        .select('provider_event_id')
        .where('handled_by_chain', 'is not', null)
        .execute();
      expect(stamped.map((r) => r.provider_event_id)).toEqual([recorded.eventId]);
    });
  });
});
