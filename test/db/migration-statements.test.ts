import { createHash } from 'node:crypto';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type LogEvent } from 'kysely';
import { Pool } from 'pg';
import { knownMigrations, migrateToLatest } from '../../src/db/migrate';
import type { Database } from '../../src/db/schema';
import { testDatabases } from '../../harness/databases';
import PINNED from './migration-pins.json';

// Applied migrations are history: the databases that ran them hold what they produced, so a
// refactor of their code (src/db/migrations/columns.ts, say) must leave every statement as it was.
// Pinned in migration-pins.json: a digest of each migration's statements and parameters on each
// dialect. A migration added later is not pinned there until someone pins it.

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
