import { createHash } from 'node:crypto';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type LogEvent } from 'kysely';
import { Pool } from 'pg';
import { knownMigrations, migrateToLatest } from '../../src/db/migrate';
import type { Database } from '../../src/db/schema';
import { testDatabases } from '../../harness/databases';

// Applied migrations are history: the databases that ran them hold what they produced, so a
// refactor of their code (src/db/migrations/columns.ts, say) must leave every statement as it was.
// Pinned: a digest of each migration's statements and parameters on each dialect. A migration
// added later is not pinned here until someone pins it.
const PINNED: Record<string, { sqlite: string; postgres: string }> = {
  '0001_create_orders_and_payments': { sqlite: 'd948a74bd51b8c17', postgres: 'e9d9fb8f1f3da51f' },
  '0002_order_refund_review': { sqlite: 'f90605a78326160c', postgres: 'f64270f930f9a638' },
  '0003_loyalty_points': { sqlite: '1169bb614cb396d9', postgres: '5173c3218b3be936' },
  '0004_stock_snapshots': { sqlite: '81b87ec90110eca2', postgres: 'cdc1d4068d390b73' },
  '0005_payment_recorded_by_run': { sqlite: '2cd82651dd19696a', postgres: '2cd82651dd19696a' },
  '0006_alert_deliveries': { sqlite: 'cf347d852940bc7e', postgres: 'a7297175c86d62b7' },
  '0007_order_event_handled': { sqlite: 'd61d2d5ec94afe72', postgres: 'd61d2d5ec94afe72' },
  '0008_refunds': { sqlite: 'c64a262337feca07', postgres: '289351ace0439918' },
  '0009_unmatched_deliveries': { sqlite: 'a13e30af29ff3763', postgres: '0842a6ce7f98a72f' },
  '0010_unmatched_recorded_by_run': { sqlite: 'f00f174c0ffa7b97', postgres: 'f00f174c0ffa7b97' },
  '0011_shipment_cancelled': { sqlite: '04fb6d5cbf7eb3f9', postgres: 'b408b36a37eb547e' },
  '0012_disputes_and_settlements': { sqlite: '7032c76a51c999c2', postgres: '34f4b341b72dff05' },
  '0013_partner_pauses': { sqlite: 'c84977e578cc6e7b', postgres: 'f2dab8e01aa7266e' },
};

/** Every migration's statements, as Kysely sent them: those after the migrator's own reads. */
async function statementsByMigration(db: Kysely<Database>, log: string[]) {
  await migrateToLatest(db);
  const byMigration: Record<string, string[]> = {};
  let current: string[] = [];
  for (const line of log) {
    const recorded = /^insert into "kysely_migration" .*\["([^"]+)",/.exec(line);
    if (recorded) byMigration[recorded[1]!] = current;
    if (recorded || line.startsWith('select "name", "timestamp" from "kysely_migration"')) {
      current = [];
    } else {
      current.push(line);
    }
  }
  return byMigration;
}

const logInto = (log: string[]) => (event: LogEvent) =>
  void log.push(`${event.query.sql} ${JSON.stringify(event.query.parameters)}`);

const digest = (statements: string[] | undefined) =>
  statements && createHash('sha256').update(statements.join('\n')).digest('hex').slice(0, 16);

async function digests(name: 'sqlite' | 'postgres'): Promise<Record<string, string | undefined>> {
  const log: string[] = [];
  if (name === 'sqlite') {
    const db = new Kysely<Database>({
      dialect: new SqliteDialect({ database: new SQLite(':memory:') }),
      log: logInto(log),
    });
    const statements = await statementsByMigration(db, log).finally(() => db.destroy());
    return Object.fromEntries(knownMigrations().map((m) => [m, digest(statements[m])]));
  }
  const empty = await testDatabases.find((d) => d.name === 'postgres')!.create({ migrate: false });
  try {
    const db = new Kysely<Database>({
      dialect: new PostgresDialect({ pool: new Pool({ connectionString: empty.url, max: 1 }) }),
      log: logInto(log),
    });
    const statements = await statementsByMigration(db, log).finally(() => db.destroy());
    return Object.fromEntries(knownMigrations().map((m) => [m, digest(statements[m])]));
  } finally {
    await empty.close();
  }
}

it.each(['sqlite', 'postgres'] as const)(
  'every pinned migration sends the same statements on %s as when it was applied',
  async (name) => {
    const actual = await digests(name);
    const pinned = Object.entries(PINNED).map(([m, pin]) => [m, pin[name]]);
    expect(pinned.length).toBeGreaterThan(0);
    expect(pinned.map(([m]) => [m, actual[m!]])).toEqual(pinned);
  },
);
