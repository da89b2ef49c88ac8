import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort } from '../../harness/ports';
import { startCluster } from '../../dev/cluster/cluster';
import { freeClusterPorts, NUM_HISTORY_SHARDS, SERVICES } from '../../dev/cluster/config';
import { TEMPORAL_SERVER_VERSION } from '../../dev/cluster/provision-server';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../../src/shared/search-attributes';
import { startDevServer } from '../../harness/temporal/dev-server';
import { devServerExecutable } from '../../harness/temporal/provision';
import { childrenOf, findProcess, type ProcessGroup } from './procstat';

export interface BenchServer {
  address: string;
  /**
   * The Temporal variables that reach this server besides TEMPORAL_ADDRESS (TLS files, namespace),
   * as the Temporal CLI reads them: given to the HTTP and worker processes, and read by the
   * driver's own client through the same module. None for the plain-text dev server.
   */
  env?: Record<string, string>;
  /** The server process, for CPU accounting (a cluster: its frontend). */
  pid: number;
  /** A multi-service server: each of its processes (and its database), for CPU accounting. */
  processes?: Record<string, ProcessGroup>;
  /** How the results files describe the server and its state. */
  description: string;
  /** What `--version` of the executable said. */
  version: string;
  shutdown(): Promise<void>;
}

/**
 * The Temporal CLI dev server the project provisions, on free loopback ports, keeping its state in
 * memory (as the tests do): the same server for every variant a benchmark compares.
 */
export async function startBenchServer(): Promise<BenchServer> {
  const [port, uiPort] = [await freePort(), await freePort()];
  const server = await startDevServer({
    port,
    uiPort,
    ip: '127.0.0.1',
    // As `npm start` registers them: the starter and the workflows set these.
    searchAttributes: [...CUSTOM_SEARCH_ATTRIBUTES],
    log: (line) => process.stderr.write(`[temporal] ${line}\n`),
  });
  const pid = findProcess(
    (argv) => argv.includes('start-dev') && argv.includes('--port') && argv.includes(String(port)),
  );
  if (pid === undefined) {
    await server.shutdown();
    throw new Error(`started the dev server on port ${port} but cannot find its process`);
  }
  const version = await serverVersion();
  return {
    address: server.address,
    pid,
    version,
    description: `${version} (dev server, one process), in-memory state, 127.0.0.1`,
    shutdown: () => server.shutdown(),
  };
}

/**
 * The multi-service cluster of `npm run cluster` (dev/cluster), on free ports in a temporary
 * directory: frontend, history, matching and worker processes, PostgreSQL 15, 4 history shards,
 * mTLS on the frontend and between the services. The app reaches it through the TEMPORAL_*
 * variables in `env`, as it would reach any secured cluster.
 */
export async function startClusterBenchServer(): Promise<BenchServer> {
  const root = mkdtempSync(path.join(os.tmpdir(), 'order-payments-bench-cluster-'));
  // PostgreSQL runs as its own user and must reach its directory under this one.
  chmodSync(root, 0o755);
  try {
    const cluster = await startCluster({
      root,
      ports: await freeClusterPorts(),
      log: (line) => process.stderr.write(`[cluster] ${line}\n`),
    });
    const processes: Record<string, ProcessGroup> = {};
    for (const service of SERVICES) processes[service] = cluster.pid(service)!;
    const dataDir = path.join(root, 'pg', 'data');
    const postmaster = findProcess((argv) => argv.includes('-D') && argv.includes(dataDir));
    // Temporal keeps its connection pools open, so the backends at a meter's start are the ones
    // that do its work during the round.
    if (postmaster !== undefined)
      processes.postgres = () => [postmaster, ...childrenOf(postmaster)];
    return {
      address: cluster.address,
      env: cluster.clientEnv(),
      pid: cluster.pid('frontend')!,
      processes,
      version: `Temporal server ${TEMPORAL_SERVER_VERSION}`,
      description: `Temporal server ${TEMPORAL_SERVER_VERSION}: frontend, history, matching, worker as separate processes; PostgreSQL 15 persistence and visibility (fsync off); ${NUM_HISTORY_SHARDS} history shards; mTLS (frontend and internode); 127.0.0.1`,
      shutdown: async () => {
        await cluster.stop();
        rmSync(root, { recursive: true, force: true });
      },
    };
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    throw error;
  }
}

/** The server a benchmark runs on: `--server dev` (default) or `--server cluster`. */
export function startServerOfKind(kind: 'dev' | 'cluster'): Promise<BenchServer> {
  return kind === 'cluster' ? startClusterBenchServer() : startBenchServer();
}

async function serverVersion(): Promise<string> {
  const executable = await devServerExecutable({ log: () => undefined });
  if (executable.type !== 'existing-path') return "the SDK's downloaded dev server";
  try {
    return execFileSync(executable.path, ['--version'], { encoding: 'utf8' })
      .split('\n')[0]!
      .trim();
  } catch {
    return executable.path;
  }
}
