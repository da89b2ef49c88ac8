import type { Kysely } from 'kysely';
import type { DisputeEvent, RecordedDispute } from '../../shared/payment-events';
import type { Database } from '../schema';

export interface RecordDisputeResult {
  /** This call inserted the event's row; false for a redelivery or a retry. */
  created: boolean;
  /** The order of the disputed payment; null while that payment is not recorded. */
  orderId: number | null;
}

export interface DisputesRepository {
  /**
   * Records a dispute event once (UNIQUE provider_event_id), matched to its order as a refund is
   * (the payment with its reference, else the order it names), else kept with no order until its
   * payment is recorded, which claims it.
   */
  record(event: DisputeEvent): Promise<RecordDisputeResult>;
  /** Every dispute event recorded for the order, oldest first. */
  forOrder(orderId: number): Promise<RecordedDispute[]>;
  /** As PaymentsRepository.handledBy, for dispute events. */
  handledBy(providerEventId: string): Promise<string | null | undefined>;
  markHandled(providerEventId: string, chain: string): Promise<void>;
}

export function createDisputesRepository(db: Kysely<Database>): DisputesRepository {
  async function matchOrder(event: Pick<DisputeEvent, 'paymentRef' | 'orderId'>) {
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
      // Matched after the insert committed, as a refund: a payment recorded meanwhile claims the
      // row from its side after its own commit, so one of the two always sees the other.
      const orderId = await matchOrder(event);
      if (orderId !== null) {
        await db
          .updateTable('disputes')
          .set({ order_id: orderId })
          .where('provider_event_id', '=', event.eventId)
          .where('order_id', 'is', null)
          .execute();
      }
      const row = await db
        .selectFrom('disputes')
        .select('order_id')
        .where('provider_event_id', '=', event.eventId)
        .executeTakeFirstOrThrow();
      return { created: inserted !== undefined, orderId: row.order_id };
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

    async handledBy(providerEventId) {
      const row = await db
        .selectFrom('disputes')
        .select('handled_by_chain')
        .where('provider_event_id', '=', providerEventId)
        .executeTakeFirst();
      return row && row.handled_by_chain;
    },

    async markHandled(providerEventId, chain) {
      await db
        .updateTable('disputes')
        .set({ handled_by_chain: chain })
        .where('provider_event_id', '=', providerEventId)
        .where('handled_by_chain', 'is', null)
        .execute();
    },
  };
}
