import { inspect } from 'node:util';
import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { Database } from './schema';
import * as m0001 from './migrations/0001_create_orders_and_payments';
import * as m0002 from './migrations/0002_order_refund_review';
import * as m0003 from './migrations/0003_loyalty_points';
import * as m0004 from './migrations/0004_stock_snapshots';
import * as m0005 from './migrations/0005_payment_recorded_by_run';
import * as m0006 from './migrations/0006_alert_deliveries';
import * as m0007 from './migrations/0007_order_event_handled';
import * as m0008 from './migrations/0008_refunds';

/**
 * Every migration, by name, in order. Imported rather than found by scanning a folder, so the
 * same list runs under jest, tsx and compiled dist. Names are recorded in the database: never
 * rename or reorder one that has shipped; add the next number instead.
 */
const migrations: Readonly<Record<string, Migration>> = {
  '0001_create_orders_and_payments': m0001,
  '0002_order_refund_review': m0002,
  '0003_loyalty_points': m0003,
  '0004_stock_snapshots': m0004,
  '0005_payment_recorded_by_run': m0005,
  '0006_alert_deliveries': m0006,
  '0007_order_event_handled': m0007,
  '0008_refunds': m0008,
};

const provider: MigrationProvider = {
  getMigrations: () => Promise.resolve({ ...migrations }),
};

/** Brings the schema up to date; returns the names applied by this call (empty when current). */
export async function migrateToLatest(db: Kysely<Database>): Promise<string[]> {
  // No migration is applied twice when several processes start together: on PostgreSQL they
  // queue on the migrator's advisory lock; on SQLite (no such lock) the loser of the race fails
  // its migration transaction with an error and can simply run again.
  const { error, results = [] } = await new Migrator({ db, provider }).migrateToLatest();
  if (error !== undefined) {
    const failed = results.find((r) => r.status === 'Error')?.migrationName;
    const detail = error instanceof Error ? error.message : inspect(error);
    throw new Error(
      failed
        ? `Database migration ${failed} failed (later ones were not run): ${detail}`
        : `Database migrations could not run: ${detail}`,
      { cause: error },
    );
  }
  return results.filter((r) => r.status === 'Success').map((r) => r.migrationName);
}

/** Names of all migrations this build knows, in order. */
export function knownMigrations(): string[] {
  return Object.keys(migrations);
}
