import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../ports';
import { quietCommand, shellQuote, startOrphanWatchdog } from '../process/watchdog';
import { createPostgresCluster, type PostgresCluster } from './cluster';

export { postgresServerInstalled } from './cluster';

/** A PostgreSQL server for the test run: its superuser URL, and how to get rid of it. */
export interface TestPostgres {
  url: string;
  stop(): Promise<void>;
}

// Durability is pointless for a cluster deleted after the run; turning it off saves seconds.
// Test files run in parallel, each with its own pools: leave headroom over the default 100.
const SERVER_SETTINGS = [
  'fsync=off',
  'synchronous_commit=off',
  'full_page_writes=off',
  'max_connections=200',
];

/**
 * Starts a throwaway PostgreSQL cluster on 127.0.0.1, or uses TEST_POSTGRES_URL when that is set.
 * The cluster lives in a fresh temporary directory that `stop()` removes; a watchdog process
 * does the same if this process dies without calling `stop()` (a jest run killed midway).
 */
export async function startTestPostgres(): Promise<TestPostgres> {
  const existing = process.env.TEST_POSTGRES_URL;
  if (existing) return { url: existing, stop: () => Promise.resolve() };

  const root = mkdtempSync(path.join(tmpdir(), 'order-payments-pg-'));
  let cluster: PostgresCluster | undefined;
  let watchdog: { stop(): void } | undefined;
  const shutDown = () => {
    try {
      if (cluster) cluster.destroy();
      else rmSync(root, { recursive: true, force: true });
    } finally {
      watchdog?.stop();
    }
  };
  try {
    cluster = createPostgresCluster(root, await freePort(), SERVER_SETTINGS);
    // The stop command names the data directory only, so it holds for whichever port wins.
    watchdog = startOrphanWatchdog([
      quietCommand(cluster.stopImmediateCommand),
      `rm -rf ${shellQuote(root)}`,
    ]);
    cluster = await startOnFreePort(root, cluster);
  } catch (error) {
    shutDown();
    throw error;
  }

  let stopping: Promise<void> | undefined;
  return {
    url: cluster.url,
    stop: () => (stopping ??= Promise.resolve().then(shutDown)),
  };
}

/**
 * Another process can take the probed port before the server binds it, so a start that fails on
 * the port is retried on a new one (the data directory made by the first attempt is kept).
 */
async function startOnFreePort(root: string, first: PostgresCluster): Promise<PostgresCluster> {
  let cluster = first;
  for (let attempt = 1; ; attempt++) {
    try {
      await cluster.start();
      return cluster;
    } catch (error) {
      if (attempt >= 3 || !/could not bind|already in use/i.test(String(error))) throw error;
      cluster = createPostgresCluster(root, await freePort(), SERVER_SETTINGS);
    }
  }
}
