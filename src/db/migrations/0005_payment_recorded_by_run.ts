import type { Kysely } from 'kysely';

/**
 * Who recorded a payment, and whether it won the order. An activity attempt can commit its
 * row and die before reporting back; the retry (same workflow run) must then learn that the
 * row is its own, and whether it owns the fulfilment, instead of mistaking it for someone
 * else's and dropping the order.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

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
