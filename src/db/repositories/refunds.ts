import type { Kysely } from 'kysely';
import type { RecordedRefund, RefundEvent } from '../../shared/payment-events';
import type { Database } from '../schema';
import { matchToOrder, type EventLedger, type RecordEventResult } from './event-ledger';
import { eventHandledStamp } from './handled-stamp';

/** `orderId`: the order of the payment it refunds; null while that payment is not recorded. */
export type RecordRefundResult = RecordEventResult;

export type RefundsRepository = EventLedger<RefundEvent, RecordedRefund>;

export function createRefundsRepository(db: Kysely<Database>): RefundsRepository {
  return {
    async record(event) {
      const inserted = await db
        .insertInto('refunds')
        .values({
          provider_event_id: event.eventId,
          payment_ref: event.paymentRef,
          kind: event.kind,
          refund_id: event.refundId ?? null,
          amount: event.amount,
          currency: event.currency ?? null,
          status: event.status,
          order_id: null,
          created_at: new Date().toISOString(),
        })
        .onConflict((oc) => oc.column('provider_event_id').doNothing())
        .returning('id')
        .executeTakeFirst();
      return { created: inserted !== undefined, orderId: await matchToOrder(db, 'refunds', event) };
    },

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
