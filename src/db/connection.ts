import { mkdirSync } from 'node:fs';
import path from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect, SqliteDialect, type Transaction } from 'kysely';
import { Pool, types as pgTypes, type CustomTypesConfig, type PoolClient } from 'pg';
import type { Database } from './schema';

export type DatabaseDialect = 'sqlite' | 'postgres';

export interface DatabaseHandle {
  readonly db: Kysely<Database>;
  readonly dialect: DatabaseDialect;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** Default 10: a worker's concurrent activities, and several processes in `max_connections`. */
  poolMax?: number;
  /** Idle pooled clients' errors (server restart, dropped link); the pool replaces them. */
  onPoolError?: (error: Error) => void;
}

export type DatabaseLocation =
  { dialect: 'sqlite'; filename: string } | { dialect: 'postgres'; connectionString: string };

const DEFAULT_POOL_MAX = 10;
// A server that is down fails the activity (Temporal retries it) instead of parking it.
const POOL_CONNECT_TIMEOUT_MS = 10_000;
// SQLite's single write lock (another process on the file), before SQLITE_BUSY.
const SQLITE_BUSY_TIMEOUT_MS = 5_000;
const POSTGRES_STATEMENT_TIMEOUT_MS = 5_000;
// The server enforces statement_timeout, a hung server (SIGSTOP, partition) nothing: the client
// gives up a little later, so a live server's own error still comes first.
const POSTGRES_QUERY_TIMEOUT_MS = POSTGRES_STATEMENT_TIMEOUT_MS + 1_000;
// Keep-alive finds an idle connection whose peer vanished before a request takes it.
const POSTGRES_KEEPALIVE_INITIAL_DELAY_MS = 10_000;
const SQLITE_MEMORY = ':memory:';

/** `sqlite:./data/app.db` (cwd-relative), `sqlite:/abs.db`, `sqlite::memory:`, `postgres://…`. */
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

/** Nothing is migrated here: see `migrateToLatest`. */
export function createDatabase(databaseUrl: string, options: DatabaseOptions = {}): DatabaseHandle {
  const location = parseDatabaseUrl(databaseUrl);
  return location.dialect === 'sqlite'
    ? openSqlite(location.filename)
    : openPostgres(location.connectionString, options);
}

// One connection per SQLite file per process: better-sqlite3 waits for a lock synchronously, so
// a second connection would keep the first from committing until `busy_timeout`.
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
    // WAL lets the HTTP server read while the worker writes. `synchronous` stays FULL: a recorded
    // payment must survive a power cut.
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
    // Abandoned by the server well before the activity's 10 s start-to-close, so a retry never
    // runs beside a query still going.
    statement_timeout: POSTGRES_STATEMENT_TIMEOUT_MS,
    query_timeout: POSTGRES_QUERY_TIMEOUT_MS,
    keepAlive: true,
    keepAliveInitialDelayMillis: POSTGRES_KEEPALIVE_INITIAL_DELAY_MS,
    types: isoTimestampTypes,
  });
  // Without a listener an idle client's error (server restart) is an unhandled 'error' event
  // that takes the process down; the pool already discards that client.
  const onError = options.onPoolError ?? reportPoolError;
  pool.on('error', onError);
  // A checked-out client emits 'error' too when the server goes away: one failed attempt, not
  // a dead worker.
  pool.on('connect', (client) => {
    client.on('error', onError);
    endClientOnQueryTimeout(client);
  });
  return toHandle(new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), 'postgres');
}

// pg (8.23) leaves a client whose query hit `query_timeout` with the query outstanding, and the
// next query would wait behind it: ended before Kysely sees the rejection, the pool drops it.
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
  // pg: the socket closed under a client ("Connection terminated ... unexpectedly", ...).
  'Connection terminated',
  'timeout exceeded when trying to connect',
];

/** Unreachable or too late (network, pool, timeout, server restarting, SQLite lock): an outage to
 *  retry, not a bug. Looks through `cause` and AggregateError's `errors` (several addresses). */
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

/** One representation of `timestamptz` (ISO-8601 UTC text) on both dialects, for this pool only. */
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

// READ COMMITTED: after `ON CONFLICT DO NOTHING` yields to a concurrent insert, the insert-or-get
// repositories' next statement must see its row, where a stricter level would abort.
export function inReadCommitted<T>(
  db: Kysely<Database>,
  work: (trx: Transaction<Database>) => Promise<T>,
): Promise<T> {
  return db.transaction().setIsolationLevel('read committed').execute(work);
}
