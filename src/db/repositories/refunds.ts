import type { Kysely } from 'kysely';
import type { RecordedRefund, RefundEvent } from '../../shared/payment-events';
import type { Database } from '../schema';
import { type EventLedger, recordInLedger } from './event-ledger';
import { eventHandledStamp } from './handled-stamp';

export type RefundsRepository = EventLedger<RefundEvent, RecordedRefund>;

export function createRefundsRepository(db: Kysely<Database>): RefundsRepository {
  return {
    record: (event) =>
      recordInLedger(db, 'refunds', event, {
        provider_event_id: event.eventId,
        payment_ref: event.paymentRef,
        kind: event.kind,
        refund_id: event.refundId ?? null,
        amount: event.amount,
        currency: event.currency ?? null,
        order_id: null,
        status: event.status,
        created_at: new Date().toISOString(),
      }),

    async forOrder(orderId) {
      const rows = await db
        .selectFrom('refunds')
        .select(['kind', 'refund_id', 'amount', 'status'])
        .where('order_id', '=', orderId)
        .orderBy('id')
        .execute();
      return rows.map((r) => ({
        kind: r.kind,
        refundId: r.refund_id,
        amount: Number(r.amount),
        status: r.status,
      }));
    },

    ...eventHandledStamp(db, 'refunds'),
  };
}
