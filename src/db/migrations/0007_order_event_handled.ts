import type { Kysely } from 'kysely';

/**
 * Which order workflow finished with a payment event, by the run ID its chain started with. A
 * hand-over repeated after that (a worker lost between the signal-with-start and its workflow
 * task, an operator's retry of the payment, a redelivery after retention) reads it and starts no
 * second order run; an order run given an event that another chain finished does nothing with
 * it. A reset keeps the chain's first run ID, so `ops retry` of the order run still redoes it.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  await db.schema.alterTable('payments').addColumn('handled_by_chain', 'text').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('payments').dropColumn('handled_by_chain').execute();
}
