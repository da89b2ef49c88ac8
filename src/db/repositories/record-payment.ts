import { sql, type Kysely } from 'kysely';
import { inReadCommitted } from '../connection';
import type { Database, PaymentRow } from '../schema';
import { MISSING_REFERENCE, unlessMissingReference } from './foreign-key';
import { claimParked } from './event-ledger';
import type { Payment, RecordPaymentInput, RecordPaymentResult } from './payments';
import { createUnmatchedRepository } from './unmatched';

// PaymentsRepository.recordPayment (./payments.ts): the payment's insert-or-get, the claim of its
// order, an unknown order's event kept in the unmatched inbox, and the refunds and disputes that
// came before the payment.

/** The unmatched reason a payment for an order that does not exist is kept under. */
export const UNKNOWN_ORDER = 'unknown_order';

/** `db` must not be a transaction: the recording opens its own. */
export async function recordPayment(
  db: Kysely<Database>,
  input: RecordPaymentInput,
): Promise<RecordPaymentResult> {
  const result = await recordOnce(db, input);
  if (result.kind !== 'created' && result.kind !== 'existing') return result;
  // After the payment's commit, so a refund recorded meanwhile (which looks for the payment
  // after its own commit) is claimed by one side or the other, never by neither.
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

async function recordOnce(
  db: Kysely<Database>,
  input: RecordPaymentInput,
): Promise<RecordPaymentResult> {
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
    // Insert-or-get, with the UNIQUE constraint as the judge: RETURNING yields a row only to
    // the call that inserted it. On PostgreSQL an uncommitted insert of the same event makes
    // this one wait for its outcome, so the select below always finds the winner.
    const inserted = await unlessMissingReference(() =>
      trx
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
        .executeTakeFirst(),
    );
    if (inserted === MISSING_REFERENCE) {
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

export function toPayment(row: PaymentRow): Payment {
  return {
    id: row.id,
    orderId: row.order_id,
    providerEventId: row.provider_event_id,
    amount: row.amount,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
