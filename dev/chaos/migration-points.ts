import path from 'node:path';
import { sql } from 'kysely';
import { createDatabase } from '../../src/db';
import { knownMigrations } from '../../src/db/migrate';
import { HOLD_AT_ENV } from '../../harness/migrations/hold';
import type { ProcessSpec, SupervisedProcess } from '../../harness/process/supervisor';

/**
 * The migration rows of the crash matrix: `npm run migrate`'s command, on a fresh database,
 * stopped between two statements of a migration by the migrations' own hold preload
 * (harness/migrations/hold.ts, whose points harness/migrations/points.ts lists) and SIGKILLed there; run
 * again, it must finish, and leave the schema a clean migration leaves.
 */

const ROOT = path.resolve(__dirname, '..', '..');
const HOLD_PRELOAD = path.join(ROOT, 'harness', 'migrations', 'hold.ts');

/** `npm run migrate` (src/cli/migrate.ts) against `databaseUrl`, held at `holdAt` if given. */
export function migrateSpec(options: {
  name: string;
  databaseUrl: string;
  holdAt: string | undefined;
  logDir: string;
  onControlLine: (line: string, process: SupervisedProcess) => void;
}): ProcessSpec {
  return {
    name: options.name,
    command: process.execPath,
    args: ['--import', 'tsx', '--import', HOLD_PRELOAD, 'src/cli/migrate.ts'],
    env: {
      ...process.env,
      DATABASE_URL: options.databaseUrl,
      [HOLD_AT_ENV]: options.holdAt ?? '',
    },
    cwd: ROOT,
    logFile: path.join(options.logDir, `${options.name}.log`),
    restart: false,
    restartDelayMs: 0,
    onControlLine: options.onControlLine,
  };
}

/**
 * What a migration leaves, comparable across runs: the migrations recorded, each table with its
 * columns, and the indexes (the unique keys the exactly-once guarantees rest on).
 */
export async function schemaOf(databaseUrl: string): Promise<string> {
  const handle = createDatabase(databaseUrl, { poolMax: 1 });
  try {
    const db = handle.db;
    const tables = await db.introspection.getTables();
    const columns = tables
      .map(
        (t) =>
          `${t.name}(${t.columns
            .map((c) => `${c.name} ${c.dataType}${c.isNullable ? '' : ' not null'}`)
            .join(', ')})`,
      )
      .sort();
    const postgres = databaseUrl.startsWith('postgres');
    const indexes = postgres
      ? await sql<{ name: string }>`
          select indexname as name from pg_indexes where schemaname = 'public'`.execute(db)
      : await sql<{ name: string }>`
          select name from sqlite_master where type = 'index'`.execute(db);
    const recorded = await sql<{ name: string }>`
      select name from kysely_migration order by name`.execute(db);
    return [
      `migrations: ${recorded.rows.map((r) => r.name).join(', ')}`,
      `tables: ${columns.join('; ')}`,
      `indexes: ${indexes.rows
        .map((r) => r.name)
        .sort()
        .join(', ')}`,
    ].join('\n');
  } finally {
    await handle.close();
  }
}

/** Every migration this build has is recorded: the line `schemaOf` starts with. */
export function allMigrationsLine(): string {
  return `migrations: ${[...knownMigrations()].sort().join(', ')}`;
}
