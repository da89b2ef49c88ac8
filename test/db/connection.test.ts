import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { runInNewContext } from 'node:vm';
import { sql } from 'kysely';
import { createDatabase, parseDatabaseUrl } from '../../src/db/connection';
import { testDatabases } from '../../harness/databases';
import { until } from '../support/eventually';
import { adoptSqliteErrors, betterSqlite3Addon } from '../support/sqlite-errors';

describe('parseDatabaseUrl', () => {
  it('resolves a relative SQLite path against the working directory', () => {
    expect(parseDatabaseUrl('sqlite:./data/app.db')).toEqual({
      dialect: 'sqlite',
      filename: path.resolve('data/app.db'),
    });
  });

  it('accepts absolute SQLite paths, in-memory SQLite and both PostgreSQL schemes', () => {
    expect(parseDatabaseUrl('sqlite:/var/lib/app.db')).toEqual({
      dialect: 'sqlite',
      filename: '/var/lib/app.db',
    });
    expect(parseDatabaseUrl('sqlite::memory:')).toEqual({
      dialect: 'sqlite',
      filename: ':memory:',
    });
    for (const url of ['postgres://u@h:5432/db', 'postgresql://u@h/db']) {
      expect(parseDatabaseUrl(url)).toEqual({ dialect: 'postgres', connectionString: url });
    }
  });

  it('refuses other schemes with a message that names the accepted ones and hides the password', () => {
    expect(() => parseDatabaseUrl('mysql://root:hunter2@db/app')).toThrow(/sqlite:.*postgres:\/\//);
    expect(() => parseDatabaseUrl('mysql://root:hunter2@db/app')).toThrow(/root:\*\*\*@/);
    expect(() => parseDatabaseUrl('mysql://root:hunter2@db/app')).not.toThrow(/hunter2/);
    expect(() => parseDatabaseUrl('sqlite:')).toThrow(/names no file/);
  });
});

describe('SQLite connection', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'order-payments-conn-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('creates the missing parent folder and turns on WAL, foreign keys and a busy timeout', async () => {
    const file = path.join(dir, 'nested', 'deeper', 'app.db');
    const handle = createDatabase(`sqlite:${file}`);
    try {
      expect(handle.dialect).toBe('sqlite');
      expect(existsSync(file)).toBe(true);
      const pragma = async (name: string) =>
        Object.values(
          (await sql.raw(`pragma ${name}`).execute(handle.db)).rows[0] as object,
        )[0] as unknown;
      expect(await pragma('journal_mode')).toBe('wal');
      expect(await pragma('foreign_keys')).toBe(1);
      expect(await pragma('busy_timeout')).toBeGreaterThan(0);
    } finally {
      await handle.close();
    }
  });

  it('opens an in-memory database, and closing twice is harmless', async () => {
    const handle = createDatabase('sqlite::memory:');
    const { rows } = await sql<{ one: number }>`select 1 as one`.execute(handle.db);
    expect(rows).toEqual([{ one: 1 }]);
    await handle.close();
    await expect(handle.close()).resolves.toBeUndefined();
  });
});

// Issue 37: CHECK constraints seemed to let rows through on SQLite in full runs, never when a
// file ran alone. The statements had failed; their errors were an earlier test file's.
describe("SQLite errors in jest's many test files per worker process", () => {
  it('are Errors of the test file running, whichever file in the worker opened SQLite first', async () => {
    const handle = createDatabase('sqlite::memory:');
    const failure = () => sql`select * from nowhere`.execute(handle.db).catch((e: unknown) => e);
    try {
      // test/support/sqlite-errors-setup.ts ran before this file (a jest setup file).
      expect(await failure()).toBeInstanceOf(Error);
      // better-sqlite3's SqliteError as an earlier test file (another realm) made it: what every
      // later file in a jest worker got before that setup file.
      const earlierFile = { exports: undefined as unknown };
      const source = readFileSync(require.resolve('better-sqlite3/lib/sqlite-error.js'), 'utf8');
      runInNewContext(source, { module: earlierFile });
      betterSqlite3Addon().setErrorConstructor(earlierFile.exports);
      const foreign = await failure();
      expect(foreign).toMatchObject({ code: 'SQLITE_ERROR', message: 'no such table: nowhere' });
      // Which jest's toThrow takes for no error at all: "Received function did not throw".
      expect(foreign).not.toBeInstanceOf(Error);

      adoptSqliteErrors();
      expect(await failure()).toBeInstanceOf(Error);
      await expect(sql`select * from nowhere`.execute(handle.db)).rejects.toThrow(/no such table/);
    } finally {
      adoptSqliteErrors();
      await handle.close();
    }
  });
});

describe('PostgreSQL connection', () => {
  const postgres = testDatabases.find((d) => d.name === 'postgres')!;

  it('reads timestamptz as an ISO-8601 UTC string, whatever the session time zone', async () => {
    // One connection, so the time zone set here is the one the select runs under.
    const handle = await postgres.create({ migrate: false, poolMax: 1 });
    try {
      await sql`set time zone 'Asia/Tokyo'`.execute(handle.db);
      const { rows } = await sql<{ at: unknown }>`
        select '2024-06-01 09:30:00.250+09'::timestamptz as at
      `.execute(handle.db);
      expect(rows[0]?.at).toBe('2024-06-01T00:30:00.250Z');
    } finally {
      await handle.close();
    }
  });

  it('keeps working within a pool of one connection, and closing twice is harmless', async () => {
    const handle = await postgres.create({ migrate: false, poolMax: 1 });
    const results = await Promise.all(
      [1, 2, 3].map((n) => sql<{ n: number }>`select ${n}::int as n`.execute(handle.db)),
    );
    expect(results.map((r) => r.rows[0]?.n)).toEqual([1, 2, 3]);
    await handle.close();
    await expect(handle.close()).resolves.toBeUndefined();
  });

  it('survives an idle client losing its server connection instead of crashing the process', async () => {
    const errors: Error[] = [];
    const handle = await postgres.create({ migrate: false, onPoolError: (e) => errors.push(e) });
    try {
      const { rows } = await sql<{ pid: number }>`select pg_backend_pid() as pid`.execute(
        handle.db,
      );
      // Kill the now idle pooled session from another connection, as a server restart would.
      const killer = createDatabase(handle.url);
      await sql`select pg_terminate_backend(${rows[0]!.pid})`.execute(killer.db);
      await killer.close();
      await until(() => errors.length > 0, 'an error event', { intervalMs: 20 });

      const again = await sql<{ one: number }>`select 1 as one`.execute(handle.db);
      expect(again.rows).toEqual([{ one: 1 }]);
    } finally {
      await handle.close();
    }
  });
});
