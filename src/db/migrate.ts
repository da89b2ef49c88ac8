import { inspect } from 'node:util';
import {
  Migrator,
  SqliteAdapter,
  sql,
  type Kysely,
  type KyselyPlugin,
  type Migration,
  type MigrationProvider,
  type MigrationResultSet,
  type PluginTransformQueryArgs,
  type PluginTransformResultArgs,
  type QueryResult,
  type RootOperationNode,
  type UnknownRow,
} from 'kysely';
import type { Database } from './schema';
import * as m0001 from './migrations/0001_create_orders_and_payments';
import * as m0002 from './migrations/0002_order_refund_review';
import * as m0003 from './migrations/0003_loyalty_points';
import * as m0004 from './migrations/0004_stock_snapshots';
import * as m0005 from './migrations/0005_payment_recorded_by_run';
import * as m0006 from './migrations/0006_alert_deliveries';
import * as m0007 from './migrations/0007_order_event_handled';
import * as m0008 from './migrations/0008_refunds';
import * as m0009 from './migrations/0009_unmatched_deliveries';
import * as m0010 from './migrations/0010_unmatched_recorded_by_run';
import * as m0011 from './migrations/0011_shipment_cancelled';
import * as m0012 from './migrations/0012_disputes_and_settlements';
import * as m0013 from './migrations/0013_partner_pauses';

/**
 * Imported rather than found by scanning a folder, so jest, tsx and dist run the same list. Names
 * are recorded in the database: never rename or reorder a shipped one. A migration runs inside
 * the runner's transaction and must not open one. Each takes `Kysely<any>`: it sees the database
 * as it was when written, not today's schema type.
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
  '0009_unmatched_deliveries': m0009,
  '0010_unmatched_recorded_by_run': m0010,
  '0011_shipment_cancelled': m0011,
  '0012_disputes_and_settlements': m0012,
  '0013_partner_pauses': m0013,
};

/** `<migration>#<n>`: in its transaction, n statements ran and the next (or the commit) has not. */
export type MigrationPoint = `${string}#${number}`;
/** Told of every point a migration passes; may pause (return a promise) or end the process. */
export type MigrationPointHook = (point: MigrationPoint) => void | Promise<void>;

// A test preload (dev/migration-hold.ts) puts its hook here, read once at load: as with crash
// points, no setting can install it.
export const MIGRATION_POINT_HOOK = Symbol.for('order-payments.migration-point-hook');
const preloadedHook = (globalThis as { [MIGRATION_POINT_HOOK]?: MigrationPointHook })[
  MIGRATION_POINT_HOOK
];

// kysely waits this long for PostgreSQL's migration lock; SQLite migrators wait as long.
const SQLITE_MIGRATION_LOCK_WAIT_MS = 60 * 60 * 1_000;

export interface MigrateOptions {
  /** Called at every point of every migration applied (default: the preloaded hook, if any). */
  atPoint?: MigrationPointHook;
  /** The migrations to bring the database to (default: this build's; tests add their own). */
  migrations?: Readonly<Record<string, Migration>>;
}

/**
 * Returns the names applied by this call. Each migration runs in one transaction with the row
 * that records it, under a lock other migrators wait for: a process that dies mid-migration
 * leaves nothing, and the next run applies it whole, once. kysely does that on PostgreSQL; on
 * SQLite the runner takes the write lock itself (BEGIN IMMEDIATE) around kysely's migrator.
 */
export async function migrateToLatest(
  db: Kysely<Database>,
  options: MigrateOptions = {},
): Promise<string[]> {
  const provider = providerFor(options.migrations ?? migrations, options.atPoint ?? preloadedHook);
  const applied: string[] = [];
  for (;;) {
    const { error, results = [] } = await migrateOneInTransaction(db, provider);
    if (error !== undefined) {
      const failed = results.find((r) => r.status === 'Error')?.migrationName;
      const detail = error instanceof Error ? error.message : inspect(error);
      throw new Error(
        failed
          ? `Database migration ${failed} failed and was rolled back (later ones were not run): ${detail}`
          : `Database migrations could not run: ${detail}`,
        { cause: error },
      );
    }
    const [result] = results;
    if (result?.status !== 'Success') return applied;
    applied.push(result.migrationName);
  }
}

export function knownMigrations(): string[] {
  return Object.keys(migrations);
}

async function migrateOneInTransaction(
  db: Kysely<Database>,
  provider: MigrationProvider,
): Promise<MigrationResultSet> {
  if (!(db.getExecutor().adapter instanceof SqliteAdapter)) {
    return new Migrator({ db, provider }).migrateUp();
  }
  // One connection for the whole step: its transaction is the lock, and kysely's migrator
  // (which then sees no transaction support and opens none) runs inside it.
  return db.connection().execute(async (connection) => {
    // SQLite ignores foreign_keys inside a transaction, and its way of changing a table (create
    // the new one, copy, drop the old, rename) needs them off: off for the step, then checked
    // whole before it commits.
    await sql.raw('pragma foreign_keys = off').execute(connection);
    try {
      await beginImmediate(connection);
      const result = await new Migrator({ db: connection, provider }).migrateUp();
      const outcome =
        result.error === undefined ? await checkForeignKeys(connection, result) : result;
      await finish(connection, outcome.error === undefined ? 'commit' : 'rollback');
      return outcome;
    } finally {
      await sql.raw('pragma foreign_keys = on').execute(connection);
    }
  });
}

/** The step's result, or an error naming its migration when it left a dangling reference. */
async function checkForeignKeys(
  connection: Kysely<Database>,
  result: MigrationResultSet,
): Promise<MigrationResultSet> {
  const { rows } = await sql<{ table: string; parent: string }>`pragma foreign_key_check`.execute(
    connection,
  );
  const [first] = rows;
  if (first === undefined) return result;
  return {
    error: new Error(
      `it left ${rows.length} row(s) whose foreign key finds no row (first: ${first.table} -> ${first.parent})`,
    ),
    results: (result.results ?? []).map((r) => ({ ...r, status: 'Error' })),
  };
}

async function finish(connection: Kysely<Database>, end: 'commit' | 'rollback'): Promise<void> {
  try {
    await sql.raw(end).execute(connection);
  } catch (error) {
    // A commit that failed may leave the transaction open on the process's shared connection.
    await sql
      .raw('rollback')
      .execute(connection)
      .catch(() => undefined);
    throw error;
  }
}

// SQLite's write lock before the migrator reads what is applied, so two processes cannot both
// apply one. Each attempt waits busy_timeout (a long migration may hold it).
async function beginImmediate(connection: Kysely<Database>): Promise<void> {
  const deadline = Date.now() + SQLITE_MIGRATION_LOCK_WAIT_MS;
  for (;;) {
    try {
      await sql.raw('begin immediate').execute(connection);
      return;
    } catch (error) {
      if (!isSqliteBusy(error) || Date.now() >= deadline) throw error;
    }
  }
}

function isSqliteBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_'));
}

function providerFor(
  all: Readonly<Record<string, Migration>>,
  atPoint: MigrationPointHook | undefined,
): MigrationProvider {
  const entries = Object.entries(all).map(([name, migration]): [string, Migration] => [
    name,
    atPoint
      ? { ...migration, up: (db) => migration.up(db.withPlugin(new PointReporter(name, atPoint))) }
      : migration,
  ]);
  return { getMigrations: () => Promise.resolve(Object.fromEntries(entries)) };
}

class PointReporter implements KyselyPlugin {
  #statements = 0;

  constructor(
    private readonly migration: string,
    private readonly atPoint: MigrationPointHook,
  ) {}

  transformQuery({ node }: PluginTransformQueryArgs): RootOperationNode {
    return node;
  }

  async transformResult({ result }: PluginTransformResultArgs): Promise<QueryResult<UnknownRow>> {
    this.#statements += 1;
    await this.atPoint(`${this.migration}#${this.#statements}`);
    return result;
  }
}
