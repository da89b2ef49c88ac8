import type { AnyDb } from './columns';

/**
 * The first run ID of the order chain that finished with a payment event: a repeated hand-over
 * (lost worker, operator retry, redelivery after retention) starts no second order run. A reset
 * keeps the chain's first run ID, so `ops retry` of the order run still redoes it.
 */

export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('payments').addColumn('handled_by_chain', 'text').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('payments').dropColumn('handled_by_chain').execute();
}
