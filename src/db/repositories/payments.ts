import { sql, type Kysely } from 'kysely';
import type { Database, PaymentRow } from '../schema';
import { inReadCommitted } from '../connection';
import { createUnmatchedRepository } from './unmatched';

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

/** The unmatched reason a payment for an order that does not exist is kept under. */
export const UNKNOWN_ORDER = 'unknown_order';

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

export interface PaymentsRepository {
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
  /**
   * The order workflow chain (its first run ID) that finished with this event; null while none
   * has, undefined when no such payment is recorded.
   */
  handledBy(providerEventId: string): Promise<string | null | undefined>;
  /** Records that `chain` finished with the event; the first chain to do so stays. */
  markHandled(providerEventId: string, chain: string): Promise<void>;
  /** The order paid by the payment with this provider reference, if one is recorded. */
  orderIdByPaymentRef(paymentRef: string): Promise<number | undefined>;
}

/** `db` must not be a transaction: `recordPayment` opens its own. */
export function createPaymentsRepository(db: Kysely<Database>): PaymentsRepository {
  return {
    async recordPayment(input) {
      const result = await recordOnce(input);
      if (result.kind === 'created' || result.kind === 'existing') {
        // After the payment's commit, so a refund recorded meanwhile (which looks for the
        // payment after its own commit) is claimed by one side or the other, never by neither.
        const paymentRef = input.paymentRef ?? input.providerEventId;
        await claimParked(db, paymentRef, input.orderId);
        // Read, not counted from the claim: a retry after a crash that followed the claim finds
        // nothing left to claim, and must still tell the order workflow to apply them.
        const disputed = await db
          .selectFrom('disputes')
          .select('id')
          .where('payment_ref', '=', paymentRef)
          .where('order_id', '=', input.orderId)
          .executeTakeFirst();
        return { ...result, disputed: disputed !== undefined };
      }
      return result;
    },

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

    async handledBy(providerEventId) {
      const row = await db
        .selectFrom('payments')
        .select('handled_by_chain')
        .where('provider_event_id', '=', providerEventId)
        .executeTakeFirst();
      return row && row.handled_by_chain;
    },

    async markHandled(providerEventId, chain) {
      await db
        .updateTable('payments')
        .set({ handled_by_chain: chain, updated_at: new Date().toISOString() })
        .where('provider_event_id', '=', providerEventId)
        .where('handled_by_chain', 'is', null)
        .execute();
    },

    async orderIdByPaymentRef(paymentRef) {
      const row = await db
        .selectFrom('payments')
        .select('order_id')
        .where('provider_payment_ref', '=', paymentRef)
        .orderBy('id')
        .executeTakeFirst();
      return row?.order_id;
    },
  };

  async function recordOnce(input: RecordPaymentInput): Promise<RecordPaymentResult> {
    return inReadCommitted(db, async (trx): Promise<RecordPaymentResult> => {
      const inbox = createUnmatchedRepository(trx);
      const keep = async (): Promise<RecordPaymentResult> => {
        const kept = await inbox.record({
          reason: UNKNOWN_ORDER,
          provider: providerOf(input.providerEventId),
          eventId: input.providerEventId,
          payload: unknownOrderPayload(input),
          recordedByRunId: input.recordedByRunId,
        });
        return { kind: 'unknown_order', unmatchedId: kept.id, created: kept.created };
      };
      const now = new Date().toISOString();
      // The foreign key is what tells a missing order; asking first would race with the
      // order's insert. PostgreSQL aborts a transaction on an error: the savepoint keeps it
      // usable for the inbox row (SQLite undoes only the failed statement either way).
      await sql`savepoint record_payment`.execute(trx);
      let inserted: PaymentRow | undefined;
      try {
        // Insert-or-get, with the UNIQUE constraint as the judge: RETURNING yields a row only
        // to the call that inserted it. On PostgreSQL an uncommitted insert of the same event
        // makes this one wait for its outcome, so the select below always finds the winner.
        inserted = await trx
          .insertInto('payments')
          .values({
            order_id: input.orderId,
            provider_event_id: input.providerEventId,
            amount: input.amount,
            recorded_by_run_id: input.recordedByRunId ?? null,
            provider_payment_ref: input.paymentRef ?? input.providerEventId,
            created_at: now,
            updated_at: now,
          })
          .onConflict((oc) => oc.column('provider_event_id').doNothing())
          .returningAll()
          .executeTakeFirst();
      } catch (error) {
        if (!isForeignKeyViolation(error)) throw error;
        await sql`rollback to savepoint record_payment`.execute(trx);
        return keep();
      }
      // Met before with no order: it stays there, for the operator, even if the order exists
      // now (a retry of the attempt that kept it, a redelivery after the workflow ID was
      // forgotten). Paying it here as well would pay it twice once the operator attaches it.
      // Asked after the insert, not before: the insert takes SQLite's write lock (waiting for
      // another process's with busy_timeout), whereas a transaction that reads first cannot
      // take it once another process has committed meanwhile (SQLITE_BUSY, not waited out).
      const keptBefore = await trx
        .selectFrom('unmatched_deliveries')
        .select('id')
        .where('event_id', '=', input.providerEventId)
        .where('reason', '=', UNKNOWN_ORDER)
        .executeTakeFirst();
      if (keptBefore) {
        await sql`rollback to savepoint record_payment`.execute(trx);
        return keep();
      }

      if (inserted) {
        // A conditional update is the claim: of two payments for one order committing at
        // once, PostgreSQL re-checks the WHERE after the row lock and SQLite serialises the
        // writes, so exactly one sees the order still pending.
        // A payment of another amount than the order's total is recorded (the money was
        // taken) but pays nothing: the order stays pending for the right payment.
        const claimed = await trx
          .updateTable('orders')
          .set({ status: 'paid', updated_at: now })
          .where('id', '=', input.orderId)
          .where('status', '=', 'pending')
          .where('total_amount', '=', input.amount)
          .executeTakeFirst();
        const firstForOrder = claimed.numUpdatedRows > 0n;
        if (firstForOrder) {
          await trx
            .updateTable('payments')
            .set({ first_for_order: 1 })
            .where('id', '=', inserted.id)
            .execute();
        }
        return {
          kind: 'created',
          payment: toPayment(inserted),
          firstForOrder,
          // The claim itself required the amount to be the total.
          amountMatchesOrder: firstForOrder || (await amountMatchesOrder(trx, inserted)),
        };
      }

      const recorded = await trx
        .selectFrom('payments')
        .selectAll()
        .where('provider_event_id', '=', input.providerEventId)
        .executeTakeFirstOrThrow();
      const payment = toPayment(recorded);
      if (recorded.order_id !== input.orderId || recorded.amount !== input.amount) {
        return { kind: 'conflict', payment };
      }
      const decided = {
        payment,
        firstForOrder: recorded.first_for_order === 1,
        amountMatchesOrder:
          recorded.first_for_order === 1 || (await amountMatchesOrder(trx, recorded)),
      };
      // Our own row from an earlier attempt of this run: carry on where it left off.
      // (A call without a run ID never matches: the column holds NULL then, not undefined.)
      if (recorded.recorded_by_run_id === input.recordedByRunId) {
        return { kind: 'created', ...decided };
      }
      return { kind: 'existing', ...decided };
    });
  }
}

/** `stripe~evt_1` is Stripe's; an unqualified ID is the contract's own scheme's (`payment`). */
function providerOf(providerEventId: string): string {
  const separator = providerEventId.indexOf('~');
  return separator > 0 ? providerEventId.slice(0, separator) : 'payment';
}

/**
 * What an operator's `unmatched attach` pays the order with (src/operator/unmatched.ts): the
 * amount, and the reference refunds and disputes will name the payment by.
 */
function unknownOrderPayload(input: RecordPaymentInput) {
  return {
    eventId: input.providerEventId,
    orderId: input.orderId,
    amount: input.amount,
    paymentRef: input.paymentRef ?? input.providerEventId,
    ...(input.currency === undefined ? {} : { currency: input.currency }),
  };
}

/**
 * Gives the refunds and disputes recorded before their payment (no order yet) to the payment's
 * order, whose workflow applies them when it takes the payment.
 */
async function claimParked(db: Kysely<Database>, paymentRef: string, orderId: number) {
  for (const table of ['refunds', 'disputes'] as const) {
    await db
      .updateTable(table)
      .set({ order_id: orderId })
      .where('payment_ref', '=', paymentRef)
      .where('order_id', 'is', null)
      .execute();
  }
}

/** The order's total never changes, so the answer is the same on every call for one payment. */
async function amountMatchesOrder(
  trx: Kysely<Database>,
  payment: Pick<PaymentRow, 'order_id' | 'amount'>,
): Promise<boolean> {
  const order = await trx
    .selectFrom('orders')
    .select('total_amount')
    .where('id', '=', payment.order_id)
    .executeTakeFirstOrThrow();
  return Number(order.total_amount) === payment.amount;
}

/** PostgreSQL's SQLSTATE 23503, or better-sqlite3's extended result code. */
function isForeignKeyViolation(error: unknown): boolean {
  if (typeof error !== 'object' || error === null || !('code' in error)) return false;
  return error.code === '23503' || error.code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}

function toPayment(row: PaymentRow): Payment {
  return {
    id: row.id,
    orderId: row.order_id,
    providerEventId: row.provider_event_id,
    amount: row.amount,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
