import type { Kysely } from 'kysely';
import type { DisputeEvent, RecordedDispute } from '../../shared/payment-events';
import type { Database } from '../schema';
import { type EventLedger, recordInLedger } from './event-ledger';
import { eventHandledStamp } from './handled-stamp';

export type DisputesRepository = EventLedger<DisputeEvent, RecordedDispute>;

export function createDisputesRepository(db: Kysely<Database>): DisputesRepository {
  return {
    record: (event) =>
      recordInLedger(db, 'disputes', event, {
        provider_event_id: event.eventId,
        payment_ref: event.paymentRef,
        dispute_id: event.disputeId,
        status: event.status,
        amount: event.amount,
        currency: event.currency ?? null,
        order_id: null,
        evidence_due_by: event.evidenceDueBy ?? null,
        reason: event.reason ?? null,
        recorded_at: new Date().toISOString(),
      }),

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
