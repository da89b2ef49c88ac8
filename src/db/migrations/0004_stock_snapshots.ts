import { sql } from 'kysely';
import { type AnyDb, columnsOf } from './columns';

/**
 * `taken_at` is the moment the snapshot stands for (the run's scheduled time) and is UNIQUE: a
 * retry of the 12:05 run finds the 12:05 snapshot instead of writing a second one.
 */

export async function up(db: AnyDb): Promise<void> {
  const { timestamp, now, createTableWithId } = columnsOf(db);

  await createTableWithId('stock_snapshots')
    .addColumn('taken_at', timestamp, (col) => col.notNull().unique())
    .addColumn('orders_paid', 'integer', (col) => col.notNull().check(sql`orders_paid >= 0`))
    .addColumn('shipments_requested', 'integer', (col) =>
      col.notNull().check(sql`shipments_requested >= 0`),
    )
    .addColumn('shipments_failed', 'integer', (col) =>
      col.notNull().check(sql`shipments_failed >= 0`),
    )
    .addColumn('created_at', timestamp, (col) => col.notNull().defaultTo(now))
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('stock_snapshots').execute();
}
