import type { Kysely } from 'kysely';

/**
 * Which workflow run kept an unmatched entry, as payments.recorded_by_run_id (0005) does for a
 * payment. The payment workflow keeps a payment for an unknown order here; its step can commit
 * and die before reporting, and the retry (same run) must learn that the entry is its own
 * (`created`, not counted as a second delivery) rather than a provider's redelivery.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await db.schema
    .alterTable('unmatched_deliveries')
    .addColumn('recorded_by_run_id', 'text')
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('unmatched_deliveries').dropColumn('recorded_by_run_id').execute();
}
