import type { Kysely } from 'kysely';
import type { DisputeEvent, RecordedDispute } from '../../shared/payment-events';
import type { Database } from '../schema';
import { matchToOrder, type EventLedger, type RecordEventResult } from './event-ledger';
import { eventHandledStamp } from './handled-stamp';

/** `orderId`: the order of the disputed payment; null while that payment is not recorded. */
export type RecordDisputeResult = RecordEventResult;

export type DisputesRepository = EventLedger<DisputeEvent, RecordedDispute>;

export function createDisputesRepository(db: Kysely<Database>): DisputesRepository {
  return {
    async record(event) {
      const inserted = await db
        .insertInto('disputes')
        .values({
          provider_event_id: event.eventId,
          dispute_id: event.disputeId,
          payment_ref: event.paymentRef,
          status: event.status,
          amount: event.amount,
          currency: event.currency ?? null,
          evidence_due_by: event.evidenceDueBy ?? null,
          reason: event.reason ?? null,
          order_id: null,
          recorded_at: new Date().toISOString(),
        })
        .onConflict((oc) => oc.column('provider_event_id').doNothing())
        .returning('id')
        .executeTakeFirst();
      return {
        created: inserted !== undefined,
        orderId: await matchToOrder(db, 'disputes', event),
      };
    },

    async forOrder(orderId) {
      const rows = await db
        .selectFrom('disputes')
        .select(['dispute_id', 'status', 'recorded_at'])
        .where('order_id', '=', orderId)
        .orderBy('id')
        .execute();
      return rows.map((r) => ({
        disputeId: r.dispute_id,
        status: r.status,
        recordedAt: r.recorded_at,
      }));
    },

    ...eventHandledStamp(db, 'disputes'),
  };
}
