import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Client } from 'pg';
import { createDatabase, type DatabaseHandle, type DatabaseOptions } from '../src/db/connection';
import { migrateToLatest } from '../src/db/migrate';

/** A database of its own for one test file (or one test); `close()` also deletes it. */
export interface TestDatabaseHandle extends DatabaseHandle {
  /** The DATABASE_URL that opens this same database, e.g. for a second handle or a child process. */
  readonly url: string;
}

export interface CreateTestDatabaseOptions extends DatabaseOptions {
  /** False leaves the schema empty, for tests of the migrations themselves. Default true. */
  migrate?: boolean;
}

export interface TestDatabase {
  name: 'sqlite' | 'postgres';
  /** A property, not a method, so `describe.each` can hand it out destructured. */
  create: (options?: CreateTestDatabaseOptions) => Promise<TestDatabaseHandle>;
}

/**
 * Both dialects, for `describe.each(testDatabases)('$name', ({ create }) => …)`. PostgreSQL is
 * never skipped: without TEST_POSTGRES_URL (set by jest's global setup) its `create` throws.
 */
export const testDatabases: TestDatabase[] = [
  { name: 'sqlite', create: createSqliteTestDatabase },
  { name: 'postgres', create: createPostgresTestDatabase },
];

async function createSqliteTestDatabase(
  options: CreateTestDatabaseOptions = {},
): Promise<TestDatabaseHandle> {
  const dir = mkdtempSync(path.join(tmpdir(), 'order-payments-sqlite-'));
  // A file, not :memory:, so the test sees WAL and file locking as production does.
  const url = `sqlite:${path.join(dir, 'test.db')}`;
  return open(url, options, () => rmSync(dir, { recursive: true, force: true }));
}

let databasesCreated = 0;

async function createPostgresTestDatabase(
  options: CreateTestDatabaseOptions = {},
): Promise<TestDatabaseHandle> {
  const serverUrl = process.env.TEST_POSTGRES_URL;
  if (!serverUrl) {
    throw new Error(
      'TEST_POSTGRES_URL is not set, so the PostgreSQL half of the database tests cannot run. ' +
        "Run the tests through jest's global setup (it starts a throwaway server), or set " +
        'TEST_POSTGRES_URL to the superuser URL of a server you have.',
    );
  }
  // Unique across the parallel jest workers (pid) and within one (counter).
  const name = `test_${process.pid}_${++databasesCreated}_${randomBytes(3).toString('hex')}`;
  await asServerAdmin(serverUrl, `CREATE DATABASE "${name}"`);
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return open(url.toString(), options, () =>
    // FORCE ends sessions a failed test left open, which would otherwise block the drop.
    asServerAdmin(serverUrl, `DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`),
  );
}

async function open(
  url: string,
  { migrate = true, ...databaseOptions }: CreateTestDatabaseOptions,
  discard: () => void | Promise<void>,
): Promise<TestDatabaseHandle> {
  const handle = createDatabase(url, databaseOptions);
  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      try {
        await handle.close();
      } finally {
        await discard();
      }
    })());
  try {
    if (migrate) await migrateToLatest(handle.db);
  } catch (error) {
    await close();
    throw error;
  }
  return { db: handle.db, dialect: handle.dialect, url, close };
}

async function asServerAdmin(serverUrl: string, statement: string): Promise<void> {
  const client = new Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(statement);
  } finally {
    await client.end();
  }
}
