import type { AnyDb } from './columns';

/**
 * As payments.recorded_by_run_id (0005): a step that committed and died before reporting learns
 * on retry that the entry is its own, not a provider's redelivery.
 */

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable('unmatched_deliveries')
    .addColumn('recorded_by_run_id', 'text')
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('unmatched_deliveries').dropColumn('recorded_by_run_id').execute();
}
