import type { Kysely, Selectable } from 'kysely';
import { inReadCommitted } from '../connection';
import type { Database, SettlementsTable } from '../schema';
import { settlementHandledStamp, type HandledStamp } from './handled-stamp';

/** An operator's settlement of a pending order with the payments it had. */
export interface Settlement {
  orderId: number;
  settledBy: string;
  reason: string;
  settledAt: string;
  /** The order's payments when it was settled, oldest first. */
  paymentIds: number[];
}

export type SettleResult =
  /** This call moved the order from pending to paid and recorded who, why and when. */
  | { kind: 'settled'; settlement: Settlement; paidAmount: number }
  /** The order was settled before (by this command run earlier, or another operator). */
  | { kind: 'already_settled'; settlement: Settlement }
  /** Nothing was written. */
  | { kind: 'refused'; why: 'order_not_found' | 'already_paid' | 'refunded' | 'no_payment' };

/** `handledBy`, `markHandled`: as PaymentsRepository's, for the settlement of the order. */
export interface SettlementsRepository extends HandledStamp<number> {
  /**
   * Settles a pending order that has at least one payment and no refund, once: the order turns
   * paid and the settlement is recorded in one transaction, and the same conditional update that
   * a payment's claim is decides between them, so a right payment committing at the same time
   * and a settlement never both pay the order.
   */
  settle(input: { orderId: number; settledBy: string; reason: string }): Promise<SettleResult>;
  find(orderId: number): Promise<Settlement | undefined>;
}

/** `db` must not be a transaction: `settle` opens its own. */
export function createSettlementsRepository(db: Kysely<Database>): SettlementsRepository {
  async function find(orderId: number) {
    const row = await db
      .selectFrom('settlements')
      .selectAll()
      .where('order_id', '=', orderId)
      .executeTakeFirst();
    return row && toSettlement(row);
  }

  /** Why the claim found nothing to do, read after it (nothing was written). */
  async function refusal(orderId: number): Promise<SettleResult> {
    const settlement = await find(orderId);
    if (settlement) return { kind: 'already_settled', settlement };
    const order = await db
      .selectFrom('orders')
      .select(['status', 'refunded_amount'])
      .where('id', '=', orderId)
      .executeTakeFirst();
    if (!order) return { kind: 'refused', why: 'order_not_found' };
    if (order.status === 'paid') return { kind: 'refused', why: 'already_paid' };
    if (Number(order.refunded_amount) > 0) return { kind: 'refused', why: 'refunded' };
    return { kind: 'refused', why: 'no_payment' };
  }

  return {
    async settle({ orderId, settledBy, reason }) {
      const settled = await inReadCommitted(db, async (trx) => {
        const now = new Date().toISOString();
        // The claim first, as recordPayment's: the write lock is taken before anything is read.
        const claimed = await trx
          .updateTable('orders')
          .set({ status: 'paid', updated_at: now })
          .where('id', '=', orderId)
          .where('status', '=', 'pending')
          .where('refunded_amount', '=', 0)
          .where((eb) =>
            eb.exists(eb.selectFrom('payments').select('id').where('order_id', '=', orderId)),
          )
          .executeTakeFirst();
        if (claimed.numUpdatedRows === 0n) return undefined;
        const payments = await trx
          .selectFrom('payments')
          .select(['id', 'amount'])
          .where('order_id', '=', orderId)
          .orderBy('id')
          .execute();
        const row = await trx
          .insertInto('settlements')
          .values({
            order_id: orderId,
            settled_by: settledBy,
            reason,
            payment_ids: JSON.stringify(payments.map((p) => p.id)),
            settled_at: now,
          })
          .returningAll()
          .executeTakeFirstOrThrow();
        const paidAmount = payments.reduce((sum, p) => sum + Number(p.amount), 0);
        return { kind: 'settled' as const, settlement: toSettlement(row), paidAmount };
      });
      return settled ?? refusal(orderId);
    },

    find,

    ...settlementHandledStamp(db),
  };
}

function toSettlement(row: Selectable<SettlementsTable>): Settlement {
  return {
    orderId: row.order_id,
    settledBy: row.settled_by,
    reason: row.reason,
    settledAt: row.settled_at,
    paymentIds: JSON.parse(row.payment_ids) as number[],
  };
}
