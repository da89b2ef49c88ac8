import type { Kysely } from 'kysely';
import { inReadCommitted } from '../connection';
import type { Database, LoyaltyLedgerRow } from '../schema';

/** One award (or reversal) of points. Timestamps are ISO-8601 UTC strings. */
export interface LoyaltyLedgerEntry {
  id: number;
  userId: number;
  orderId: number;
  points: number;
  reason: string;
  createdAt: string;
}

export interface AwardForOrderInput {
  userId: number;
  orderId: number;
  /** Added to the balance; negative takes points away (the balance may not go below zero). */
  points: number;
  /** What the points are for; one award per order and reason. */
  reason: string;
}

export interface AwardForOrderResult {
  /** True only for the call that recorded the award and moved the balance. */
  awarded: boolean;
  /** The user's balance after this call (unchanged when `awarded` is false). */
  balance: number;
}

export interface LoyaltyRepository {
  /**
   * Awards the points once per (order, reason), whatever the number of calls, concurrent or
   * not: the ledger row and the balance change commit together or not at all. A change that
   * would take the balance below zero fails (CHECK) and leaves no ledger row behind.
   */
  awardForOrder(input: AwardForOrderInput): Promise<AwardForOrderResult>;
  /** 0 for a user who never got points. */
  balanceOf(userId: number): Promise<number>;
  /** Oldest first. */
  ledgerFor(userId: number): Promise<LoyaltyLedgerEntry[]>;
}

/** `db` must not be a transaction: `awardForOrder` opens its own. */
export function createLoyaltyRepository(db: Kysely<Database>): LoyaltyRepository {
  return {
    async awardForOrder(input) {
      return inReadCommitted(db, async (trx): Promise<AwardForOrderResult> => {
        const now = new Date().toISOString();
        // Adding is not idempotent, so the decision to add is: the UNIQUE (order_id, reason)
        // judges, and RETURNING yields a row only to the call that inserted it. On PostgreSQL
        // an uncommitted insert of the same award makes this one wait for its outcome.
        const inserted = await trx
          .insertInto('loyalty_ledger')
          .values({
            user_id: input.userId,
            order_id: input.orderId,
            points: input.points,
            reason: input.reason,
            created_at: now,
          })
          .onConflict((oc) => oc.columns(['order_id', 'reason']).doNothing())
          .returning('id')
          .executeTakeFirst();

        if (!inserted) {
          // Already awarded; READ COMMITTED lets this statement see the winner's account.
          const account = await trx
            .selectFrom('loyalty_accounts')
            .select('balance')
            .where('user_id', '=', input.userId)
            .executeTakeFirst();
          return { awarded: false, balance: account?.balance ?? 0 };
        }

        // The account row first (once per user), then the increment in the UPDATE itself, so
        // two awards for different orders of one user cannot both add to the same old balance:
        // the row lock (PostgreSQL) or the single writer (SQLite) orders them. Not one upsert
        // with `balance = balance + excluded.balance`: both dialects check the CHECK on the row
        // proposed for insertion before they resolve the conflict, so a negative adjustment of
        // an existing, large enough balance would be refused.
        await trx
          .insertInto('loyalty_accounts')
          .values({ user_id: input.userId, balance: 0, created_at: now, updated_at: now })
          .onConflict((oc) => oc.column('user_id').doNothing())
          .execute();
        const account = await trx
          .updateTable('loyalty_accounts')
          .set((eb) => ({ balance: eb('balance', '+', input.points), updated_at: now }))
          .where('user_id', '=', input.userId)
          .returning('balance')
          .executeTakeFirstOrThrow();
        return { awarded: true, balance: account.balance };
      });
    },

    async balanceOf(userId) {
      const account = await db
        .selectFrom('loyalty_accounts')
        .select('balance')
        .where('user_id', '=', userId)
        .executeTakeFirst();
      return account?.balance ?? 0;
    },

    async ledgerFor(userId) {
      const rows = await db
        .selectFrom('loyalty_ledger')
        .selectAll()
        .where('user_id', '=', userId)
        .orderBy('id')
        .execute();
      return rows.map(toLedgerEntry);
    },
  };
}

function toLedgerEntry(row: LoyaltyLedgerRow): LoyaltyLedgerEntry {
  return {
    id: row.id,
    userId: row.user_id,
    orderId: row.order_id,
    points: row.points,
    reason: row.reason,
    createdAt: row.created_at,
  };
}
