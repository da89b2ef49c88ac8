import type { Kysely } from 'kysely';
import type { Database } from '../schema';
import { orderOfPayment } from './event-ledger';
import { eventHandledStamp, type HandledStamp } from './handled-stamp';
import { recordPayment, toPayment } from './record-payment';

export { UNKNOWN_ORDER } from './record-payment';

/** A payment recorded from one provider event. Timestamps are ISO-8601 UTC strings. */
export interface Payment {
  id: number;
  orderId: number;
  providerEventId: string;
  /** In the smallest currency unit. */
  amount: number;
  createdAt: string;
  updatedAt: string;
}

export interface RecordPaymentInput {
  providerEventId: string;
  orderId: number;
  amount: number;
  /**
   * The workflow run recording it. A second call from the same run (an activity retry after a
   * crash that followed the commit) gets `created` again, with the same `firstForOrder`.
   */
  recordedByRunId?: string;
  /** The provider's reference of the payment; the event ID when the provider gives none. */
  paymentRef?: string;
  /** Lowercase ISO 4217, when the provider says: kept with a payment for an unknown order. */
  currency?: string;
}

export type RecordPaymentResult =
  /**
   * This call recorded the event: the one that may start follow-up work. `firstForOrder` is true
   * for the one payment that moved the order from pending to paid (it owns the fulfilment);
   * false for a further payment of an already paid order (a double charge).
   */
  | {
      kind: 'created';
      payment: Payment;
      firstForOrder: boolean;
      /** Disputes of this payment were recorded before it (it claimed them, or an earlier call). */
      disputed?: boolean;
      /**
       * The payment's amount equals the order's total. Only such a payment can claim a pending
       * order: one that does not match leaves it pending, to be reviewed (and refunded).
       */
      amountMatchesOrder: boolean;
    }
  /**
   * The event was already recorded with the same order and amount: a redelivery or a retry. What
   * the recording decided is read back from the row, so whoever hands it on hands on the same.
   */
  | {
      kind: 'existing';
      payment: Payment;
      firstForOrder: boolean;
      amountMatchesOrder: boolean;
      disputed?: boolean;
    }
  /**
   * No such order, now or when the event was first met: no payment is written, and the event is
   * kept in the unmatched inbox (reason `unknown_order`) in the same transaction, for an operator
   * to attach, refund or dismiss. `created` as for a payment: this call (or an earlier attempt of
   * this run) kept it; false for a redelivery, which is counted there.
   */
  | { kind: 'unknown_order'; unmatchedId: number; created: boolean }
  /** The event ID is already recorded with a different order or amount; `payment` is that record. */
  | { kind: 'conflict'; payment: Payment };

/** `handledBy`, `markHandled`: which order workflow chain finished with the event (./handled-stamp.ts). */
export interface PaymentsRepository extends HandledStamp<string> {
  /**
   * Records the event once, whatever the number of calls, concurrent or not: exactly one call
   * per event ID gets `created`, and in the same transaction the order becomes 'paid' when it
   * was pending and the amount is its total. An event ID lives in payments or, for an unknown
   * order, in the unmatched inbox: never in both, even when its order is created later.
   */
  recordPayment(input: RecordPaymentInput): Promise<RecordPaymentResult>;
  /** 0 or 1: the UNIQUE constraint allows no more. */
  countByEventId(providerEventId: string): Promise<number>;
  /** Oldest first. */
  listByOrder(orderId: number): Promise<Payment[]>;
  /** The order paid by the payment with this provider reference, if one is recorded. */
  orderIdByPaymentRef(paymentRef: string): Promise<number | undefined>;
}

/** `db` must not be a transaction: `recordPayment` opens its own. */
export function createPaymentsRepository(db: Kysely<Database>): PaymentsRepository {
  return {
    recordPayment: (input) => recordPayment(db, input),

    async countByEventId(providerEventId) {
      const { count } = await db
        .selectFrom('payments')
        .select((eb) => eb.fn.countAll().as('count'))
        .where('provider_event_id', '=', providerEventId)
        .executeTakeFirstOrThrow();
      // PostgreSQL's count is a bigint, which pg hands over as a string.
      return Number(count);
    },

    async listByOrder(orderId) {
      const rows = await db
        .selectFrom('payments')
        .selectAll()
        .where('order_id', '=', orderId)
        .orderBy('id')
        .execute();
      return rows.map(toPayment);
    },

    ...eventHandledStamp(db, 'payments'),

    orderIdByPaymentRef: (paymentRef) => orderOfPayment(db, paymentRef),
  };
}
