import { execFile } from 'node:child_process';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import type { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import pg from 'pg';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../../src/shared/search-attributes';
import type { ChaosPostgres } from '../../harness/postgres/cluster';
import type { SupervisedProcess } from '../../harness/process/supervisor';
import type { ServiceName } from './config';

// The cluster's one-time steps (schemas, namespace, search attributes) and the wait between
// them; cluster.ts starts the processes and runs these in order.

// Retention decides how long a closed workflow's ID still refuses a second start: the dedup
// window of payment-<event id> (docs/operations.md). A week covers a provider's redeliveries.
const RETENTION_SECONDS = 7 * 24 * 60 * 60;
const READY_TIMEOUT_MS = 120_000;

/** Databases, schema versioning and the latest schema, each step skipped when already done. */
export async function applySchemas(
  sqlTool: string,
  postgres: ChaosPostgres,
  log: (line: string) => void,
): Promise<void> {
  const base = [
    '--plugin',
    'postgres12',
    '--ep',
    '127.0.0.1',
    '-p',
    String(postgres.port),
    '-u',
    'postgres',
    '--pw',
    'postgres',
  ];
  for (const [database, schema] of [
    ['temporal', 'postgresql/v12/temporal'],
    ['temporal_visibility', 'postgresql/v12/visibility'],
  ] as const) {
    const tool = (args: string[]) => runTool(sqlTool, [...base, '--db', database, ...args]);
    if (!(await databaseExists(postgres.url, database))) {
      log(`Creating database ${database} and its schema with temporal-sql-tool`);
      await tool(['create-database']);
      await tool(['setup-schema', '-v', '0.0']);
    }
    // The schemas are embedded in the tool; update-schema is a no-op when they are current.
    await tool(['update-schema', '--schema-name', schema]);
  }
}

export async function clusterMetadataWritten(url: string): Promise<void> {
  const client = new pg.Client({ connectionString: url.replace(/\/postgres$/, '/temporal') });
  await client.connect();
  try {
    const result = await client.query('SELECT 1 FROM cluster_metadata_info');
    if (result.rowCount === 0) throw new Error('no cluster metadata yet');
  } finally {
    await client.end();
  }
}

async function databaseExists(url: string, name: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const result = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    return result.rowCount === 1;
  } finally {
    await client.end();
  }
}

async function runTool(file: string, args: string[]): Promise<void> {
  try {
    await promisify(execFile)(file, args, { timeout: 120_000 });
  } catch (error) {
    const { stdout, stderr } = error as { stdout?: string; stderr?: string };
    throw new Error(`temporal-sql-tool ${args.slice(-3).join(' ')} failed:\n${stderr || stdout}`, {
      cause: error,
    });
  }
}

export async function registerNamespace(
  connection: Connection,
  namespace: string,
  log: (line: string) => void,
): Promise<void> {
  try {
    await connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs(RETENTION_SECONDS * 1000),
      description: 'order-payments',
    });
    log(`Namespace ${namespace} registered (retention ${RETENTION_SECONDS / 86400} days)`);
  } catch (error) {
    // ALREADY_EXISTS (6): a cluster started before, with its data kept.
    if ((error as { code?: number }).code !== 6) throw error;
  }
  // Other frontends and history learn of a new namespace from a cache refreshed every 2 s.
  await waitUntil('the namespace is known', () =>
    connection.workflowService.describeNamespace({ namespace }),
  );
}

export async function registerSearchAttributes(
  connection: Connection,
  namespace: string,
  log: (line: string) => void,
): Promise<void> {
  const existing = await connection.operatorService.listSearchAttributes({ namespace });
  const custom = existing.customAttributes ?? {};
  const missing = CUSTOM_SEARCH_ATTRIBUTES.filter(({ name }) => !(name in custom));
  if (missing.length === 0) return;
  await connection.operatorService.addSearchAttributes({
    namespace,
    searchAttributes: Object.fromEntries(
      missing.map(({ name, type }) => [
        name,
        temporal.api.enums.v1.IndexedValueType[`INDEXED_VALUE_TYPE_${type}`],
      ]),
    ),
  });
  log(
    `Search attributes registered: ${missing.map(({ name, type }) => `${name} (${type})`).join(', ')}`,
  );
}

export async function withConnection<T>(
  connect: () => Promise<Connection>,
  use: (c: Connection) => Promise<T>,
): Promise<T> {
  const connection = await connect();
  try {
    return await use(connection);
  } finally {
    await connection.close();
  }
}

/** Retries `attempt` until it resolves; fails early when a service process has died. */
export async function waitUntil(
  what: string,
  attempt: () => Promise<unknown>,
  services?: Map<ServiceName, SupervisedProcess>,
  signal?: AbortSignal,
): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastError: unknown;
  while (Date.now() < deadline) {
    signal?.throwIfAborted();
    const dead = [...(services?.values() ?? [])].find((p) => p.unexpectedExits.length > 0);
    if (dead) {
      throw new Error(`${dead.name} exited while waiting until ${what}; see its log`);
    }
    try {
      await attempt();
      return;
    } catch (error) {
      lastError = error;
    }
    await delay(500);
  }
  throw new Error(
    `Timed out after ${READY_TIMEOUT_MS / 1000}s waiting until ${what}: ${
      lastError instanceof Error ? lastError.message : String(lastError)
    }`,
  );
}
