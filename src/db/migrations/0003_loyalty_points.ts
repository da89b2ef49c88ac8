import { sql } from 'kysely';
import { type AnyDb, columnsOf } from './columns';

/**
 * Adding to a balance is not idempotent, so the decision is: every award is a ledger row, UNIQUE
 * per (order, reason), and the balance moves only in the transaction that inserted it.
 */

export async function up(db: AnyDb): Promise<void> {
  const { timestamp, now, createTableWithId, counter } = columnsOf(db);

  await db.schema
    .createTable('loyalty_accounts')
    .addColumn('user_id', 'integer', (col) => col.primaryKey())
    .addColumn(...counter('balance', 0))
    .addColumn('created_at', timestamp, (col) => col.notNull().defaultTo(now))
    .addColumn('updated_at', timestamp, (col) => col.notNull().defaultTo(now))
    .execute();

  // Append-only: a row is never updated, so it has no updated_at. A reversal would be a new
  // row with negative points and its own reason.
  await createTableWithId('loyalty_ledger')
    .addColumn('user_id', 'integer', (col) => col.notNull())
    .addColumn('order_id', 'integer', (col) => col.notNull().references('orders.id'))
    .addColumn('points', 'integer', (col) => col.notNull().check(sql`points <> 0`))
    .addColumn('reason', 'text', (col) => col.notNull())
    .addColumn('created_at', timestamp, (col) => col.notNull().defaultTo(now))
    // The judge of "awarded once": a retried or concurrent award for the same order and
    // reason hits it. Its leading order_id column also serves the foreign key's lookups.
    .addUniqueConstraint('loyalty_ledger_order_id_reason_key', ['order_id', 'reason'])
    .execute();

  await db.schema
    .createIndex('loyalty_ledger_user_id_idx')
    .on('loyalty_ledger')
    .column('user_id')
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('loyalty_ledger').execute();
  await db.schema.dropTable('loyalty_accounts').execute();
}
