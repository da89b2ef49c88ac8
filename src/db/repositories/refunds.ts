import type { Kysely } from 'kysely';
import type { RecordedRefund, RefundEvent } from '../../shared/payment-events';
import type { Database } from '../schema';

export interface RecordRefundResult {
  /** This call inserted the event's row; false for a redelivery or a retry. */
  created: boolean;
  /** The order of the payment it refunds; null while that payment is not recorded. */
  orderId: number | null;
}

export interface RefundsRepository {
  /**
   * Records a refund event once (UNIQUE provider_event_id), matched to its order through the
   * payment with its reference, else through the order it names, else kept with no order until
   * its payment is recorded (which claims it).
   */
  record(event: RefundEvent): Promise<RecordRefundResult>;
  /** Every refund event recorded for the order, oldest first. */
  forOrder(orderId: number): Promise<RecordedRefund[]>;
  /** As PaymentsRepository.handledBy, for refund events. */
  handledBy(providerEventId: string): Promise<string | null | undefined>;
  markHandled(providerEventId: string, chain: string): Promise<void>;
}

export function createRefundsRepository(db: Kysely<Database>): RefundsRepository {
  /** The order of the payment with this reference, or the one the event names, if it exists. */
  async function matchOrder(event: Pick<RefundEvent, 'paymentRef' | 'orderId'>) {
    const payment = await db
      .selectFrom('payments')
      .select('order_id')
      .where('provider_payment_ref', '=', event.paymentRef)
      .orderBy('id')
      .executeTakeFirst();
    if (payment) return payment.order_id;
    if (event.orderId === undefined) return null;
    const order = await db
      .selectFrom('orders')
      .select('id')
      .where('id', '=', event.orderId)
      .executeTakeFirst();
    return order?.id ?? null;
  }

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
      // Matched after the insert committed: a payment recorded meanwhile claims the row from its
      // side after its own commit, so one of the two always sees the other.
      const orderId = await matchOrder(event);
      if (orderId !== null) {
        await db
          .updateTable('refunds')
          .set({ order_id: orderId })
          .where('provider_event_id', '=', event.eventId)
          .where('order_id', 'is', null)
          .execute();
      }
      const row = await db
        .selectFrom('refunds')
        .select('order_id')
        .where('provider_event_id', '=', event.eventId)
        .executeTakeFirstOrThrow();
      return { created: inserted !== undefined, orderId: row.order_id };
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

    async handledBy(providerEventId) {
      const row = await db
        .selectFrom('refunds')
        .select('handled_by_chain')
        .where('provider_event_id', '=', providerEventId)
        .executeTakeFirst();
      return row && row.handled_by_chain;
    },

    async markHandled(providerEventId, chain) {
      await db
        .updateTable('refunds')
        .set({ handled_by_chain: chain })
        .where('provider_event_id', '=', providerEventId)
        .where('handled_by_chain', 'is', null)
        .execute();
    },
  };
}
