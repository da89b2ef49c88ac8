import type { AnyDb } from './columns';

/**
 * An attempt can commit its row and die before reporting; the retry (same run) must learn the row
 * is its own, and whether it owns the fulfilment, instead of dropping the order.
 */

export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('payments').addColumn('recorded_by_run_id', 'text').execute();
  await db.schema
    .alterTable('payments')
    .addColumn('first_for_order', 'integer', (col) => col.notNull().defaultTo(0))
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('payments').dropColumn('first_for_order').execute();
  await db.schema.alterTable('payments').dropColumn('recorded_by_run_id').execute();
}
