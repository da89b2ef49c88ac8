import { mkdirSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type Transaction } from 'kysely';
import { Pool, types as pgTypes, type CustomTypesConfig, type PoolClient } from 'pg';
import type { Database } from './schema';

export type DatabaseDialect = 'sqlite' | 'postgres';

/** One open database: the query builder, which dialect it speaks, and how to let go of it. */
export interface DatabaseHandle {
  readonly db: Kysely<Database>;
  readonly dialect: DatabaseDialect;
  /** Closes the file or drains the pool; safe to call more than once. */
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /**
   * Most connections this handle's PostgreSQL pool opens (default 10). Enough for a worker's
   * concurrent activities, small enough that several processes fit in the server's
   * `max_connections`. Ignored for SQLite, which has one connection per file and process.
   */
  poolMax?: number;
  /** Told about errors of idle pooled clients (server restart, dropped link); the pool replaces them. */
  onPoolError?: (error: Error) => void;
}

export type DatabaseLocation =
  { dialect: 'sqlite'; filename: string } | { dialect: 'postgres'; connectionString: string };

const DEFAULT_POOL_MAX = 10;
// A PostgreSQL server that is down should fail the activity (and let Temporal retry it), not
// park it until its own timeout.
const POOL_CONNECT_TIMEOUT_MS = 10_000;
// Writers wait this long for SQLite's single write lock (another process on the same file)
// before failing with SQLITE_BUSY.
const SQLITE_BUSY_TIMEOUT_MS = 5_000;
const POSTGRES_STATEMENT_TIMEOUT_MS = 5_000;
// statement_timeout is enforced by the server: a server that hangs (SIGSTOP, a network partition)
// enforces nothing, and the query would wait as long as the hang. The client gives up a little
// after the server would have, so a live server's own timeout error still comes first.
const POSTGRES_QUERY_TIMEOUT_MS = POSTGRES_STATEMENT_TIMEOUT_MS + 1_000;
// TCP keep-alive probes an idle pooled connection, so one whose peer vanished (a partition, a
// host gone) is found dead by the kernel instead of failing the next request that takes it.
const POSTGRES_KEEPALIVE_INITIAL_DELAY_MS = 10_000;
const SQLITE_MEMORY = ':memory:';

/**
 * `sqlite:./data/app.db` (relative to the working directory), `sqlite:/abs/path.db`,
 * `sqlite::memory:`, or `postgres://…` / `postgresql://…`.
 */
export function parseDatabaseUrl(databaseUrl: string): DatabaseLocation {
  if (/^postgres(ql)?:\/\//.test(databaseUrl)) {
    return { dialect: 'postgres', connectionString: databaseUrl };
  }
  if (databaseUrl.startsWith('sqlite:')) {
    const rest = databaseUrl.slice('sqlite:'.length);
    if (rest === SQLITE_MEMORY) return { dialect: 'sqlite', filename: SQLITE_MEMORY };
    if (rest === '') {
      throw new Error('DATABASE_URL "sqlite:" names no file; use e.g. sqlite:./data/app.db');
    }
    return { dialect: 'sqlite', filename: path.resolve(rest) };
  }
  throw new Error(
    'DATABASE_URL must start with sqlite: (e.g. sqlite:./data/app.db) or postgres:// ' +
      `(got "${redactPassword(databaseUrl)}")`,
  );
}

/** Opens the database named by the URL. Nothing is migrated here: see `migrateToLatest`. */
export function createDatabase(databaseUrl: string, options: DatabaseOptions = {}): DatabaseHandle {
  const location = parseDatabaseUrl(databaseUrl);
  return location.dialect === 'sqlite'
    ? openSqlite(location.filename)
    : openPostgres(location.connectionString, options);
}

/**
 * Handles opened on one SQLite file in this process share one connection. better-sqlite3 waits
 * for a lock synchronously, blocking the event loop: a second connection in the same process
 * waiting for the first one's write lock would keep the first from ever committing, until
 * `busy_timeout` fails it. One shared connection queues them instead (Kysely runs one query
 * or transaction at a time on it). Other processes still get their own and wait their turn.
 */
const openSqliteFiles = new Map<string, { db: Kysely<Database>; users: number }>();

function openSqlite(filename: string): DatabaseHandle {
  const open = () =>
    new Kysely<Database>({ dialect: new SqliteDialect({ database: connectSqlite(filename) }) });
  // Every in-memory connection is a database of its own: nothing to share.
  if (filename === SQLITE_MEMORY) return toHandle(open(), 'sqlite');

  const shared = openSqliteFiles.get(filename) ?? { db: open(), users: 0 };
  openSqliteFiles.set(filename, shared);
  shared.users += 1;
  return toHandle(shared.db, 'sqlite', async () => {
    shared.users -= 1;
    if (shared.users > 0) return;
    openSqliteFiles.delete(filename);
    await shared.db.destroy();
  });
}

function connectSqlite(filename: string): SQLite.Database {
  if (filename !== SQLITE_MEMORY) mkdirSync(path.dirname(filename), { recursive: true });
  const sqlite = new SQLite(filename);
  try {
    // WAL lets readers (the HTTP server) proceed while the worker writes. `synchronous` stays
    // at its FULL default: a recorded payment must survive a power cut, not only a crash.
    if (filename !== SQLITE_MEMORY) sqlite.pragma('journal_mode = WAL');
    // SQLite ignores REFERENCES unless told otherwise, per connection.
    sqlite.pragma('foreign_keys = ON');
    sqlite.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  } catch (error) {
    sqlite.close();
    throw error;
  }
  return sqlite;
}

function openPostgres(connectionString: string, options: DatabaseOptions): DatabaseHandle {
  const pool = new Pool({
    connectionString,
    max: options.poolMax ?? DEFAULT_POOL_MAX,
    connectionTimeoutMillis: POOL_CONNECT_TIMEOUT_MS,
    application_name: 'order-payments',
    // A stuck statement is abandoned by the server well before the activity's start-to-close
    // timeout (10 s), so a retry never runs beside a query that is still going.
    statement_timeout: POSTGRES_STATEMENT_TIMEOUT_MS,
    query_timeout: POSTGRES_QUERY_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: POSTGRES_KEEPALIVE_INITIAL_DELAY_MS,
    types: isoTimestampTypes,
  });
  // Without a listener, an error on an idle client (e.g. the server restarting) is an unhandled
  // 'error' event and takes the whole process down; the pool already discards that client.
  const onError = options.onPoolError ?? reportPoolError;
  pool.on('error', onError);
  // The pool listens to idle clients only. A client checked out when the server goes away
  // (a restart, a crash) emits 'error' too, besides failing its query; without a listener that
  // event takes the whole worker down instead of failing one activity attempt.
  pool.on('connect', (client) => {
    client.on('error', onError);
    endClientOnQueryTimeout(client);
  });
  return toHandle(new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), 'postgres');
}

/**
 * pg (8.23) answers a query that hits `query_timeout` with an error but leaves the connection as
 * it was: the query is still outstanding on it, and the client still counts as queryable. Kysely
 * then releases it to the pool as healthy, and the next query queued on it waits behind the hung
 * one, even once the server is reachable again through fresh connections. Ending the client
 * (pg destroys the socket when a query is outstanding) makes the pool drop it on release.
 * The handler is attached before Kysely sees the rejection, so the client is ending by the time
 * Kysely releases it.
 */
function endClientOnQueryTimeout(client: PoolClient): void {
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  client.query = ((...args: unknown[]) => {
    const result = query(...args);
    if (result instanceof Promise) {
      result.catch((error: unknown) => {
        if (isQueryTimeout(error)) client.end().catch(() => undefined);
      });
    }
    return result;
  }) as PoolClient['query'];
}

function isQueryTimeout(error: unknown): boolean {
  return error instanceof Error && error.message === QUERY_READ_TIMEOUT_MESSAGE;
}

const QUERY_READ_TIMEOUT_MESSAGE = 'Query read timeout';

const UNAVAILABLE_NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'ETIMEDOUT',
  'EPIPE',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EHOSTDOWN',
  'EAI_AGAIN',
]);

// SQLSTATE 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03 cannot_connect_now (starting up,
// in recovery), 57014 query_canceled (here only ever the server's statement_timeout).
const UNAVAILABLE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '57014']);

const UNAVAILABLE_MESSAGES = [
  QUERY_READ_TIMEOUT_MESSAGE,
  // pg: the socket closed under a client ("Connection terminated", "... unexpectedly",
  // "... due to connection timeout").
  'Connection terminated',
  // pg-pool: no client could be had within connectionTimeoutMillis.
  'timeout exceeded when trying to connect',
];

/**
 * True when `error` says the database cannot be reached or answered too late (refused, reset or
 * timed-out connections, a pool that could not connect, a query timeout, PostgreSQL shutting
 * down or starting up, SQLite's write lock held too long): an outage to retry later, not a bug
 * in the request. Looks through `cause` and AggregateError's `errors` (a host with several
 * addresses fails with one error per address).
 */
export function isDatabaseUnavailable(error: unknown, depth = 0): boolean {
  if (depth > 5 || typeof error !== 'object' || error === null) return false;
  const { code, message, cause, errors } = error as {
    code?: unknown;
    message?: unknown;
    cause?: unknown;
    errors?: unknown;
  };
  if (typeof code === 'string') {
    if (UNAVAILABLE_NETWORK_CODES.has(code)) return true;
    // SQLSTATE class 08: connection exception.
    if (/^08[0-9A-Z]{3}$/.test(code) || UNAVAILABLE_SQLSTATES.has(code)) return true;
    // better-sqlite3 reports extended codes too (SQLITE_BUSY_SNAPSHOT, SQLITE_BUSY_TIMEOUT).
    if (code === 'SQLITE_BUSY' || code.startsWith('SQLITE_BUSY_')) return true;
  }
  if (typeof message === 'string' && UNAVAILABLE_MESSAGES.some((m) => message.startsWith(m))) {
    return true;
  }
  if (Array.isArray(errors) && errors.some((e) => isDatabaseUnavailable(e, depth + 1))) {
    return true;
  }
  return isDatabaseUnavailable(cause, depth + 1);
}

function toHandle(
  db: Kysely<Database>,
  dialect: DatabaseDialect,
  release: () => Promise<void> = () => db.destroy(),
): DatabaseHandle {
  let closing: Promise<void> | undefined;
  return { db, dialect, close: () => (closing ??= release()) };
}

type TypeParser = (value: string) => unknown;
const TIMESTAMPTZ = pgTypes.builtins.TIMESTAMPTZ;
const parseTimestamptz = pgTypes.getTypeParser(TIMESTAMPTZ, 'text') as (value: string) => Date;

/**
 * pg turns `timestamptz` into Date objects while SQLite hands back its stored text; formatting
 * here, for this pool only, gives callers one representation (ISO-8601 UTC strings) on both
 * dialects without touching pg's process-wide parsers.
 */
const isoTimestampTypes: CustomTypesConfig = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary'): TypeParser =>
    oid === Number(TIMESTAMPTZ) && format !== 'binary'
      ? (value) => parseTimestamptz(value).toISOString()
      : (pgTypes.getTypeParser(oid, format) as TypeParser)) as CustomTypesConfig['getTypeParser'],
};

function reportPoolError(error: Error): void {
  process.stderr.write(`postgres pool: idle client error (client discarded): ${error.message}\n`);
}

function redactPassword(url: string): string {
  return url.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@');
}

/**
 * Runs `work` in a READ COMMITTED transaction whatever the server's default isolation. The
 * insert-or-get repositories rely on it: after `ON CONFLICT DO NOTHING` yields to a concurrent
 * insert, the next statement must see that insert's committed row, where a stricter level would
 * abort with a serialization error instead. SQLite has one writer at a time and ignores the level.
 */
export function inReadCommitted<T>(
  db: Kysely<Database>,
  work: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  return db.transaction().setIsolationLevel('read committed').execute(work);
}
