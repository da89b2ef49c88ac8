import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { loadTemporalConnection } from '../../src/config/temporal-connection';
import { clientConnectionOptions } from '../../src/temporal/connection';
import { createDatabase, migrateToLatest, type DatabaseHandle } from '../../src/db';
import { startSmtpSink, type SmtpSink } from '../../harness/partners/smtp-sink';
import {
  createWarehouseSimulator,
  type WarehouseSimulator,
} from '../../harness/partners/warehouse-simulator';
import type { HttpHostApi } from '../hosts/http-host';
import type { WorkerHostApi } from '../hosts/worker-host';
import { BENCH_TASK_QUEUE } from './names';
import { workflowBundlePath } from './bundles';
import { startHost, type Host } from './host';
import { membersOf, type ProcessGroup } from './procstat';
import { BENCH_WEBHOOK_SECRET } from './http-client';
import { startBenchServer, type BenchServer } from './temporal';

/**
 * The system under test, started the same way for every benchmark: one Temporal dev server, a
 * SQLite database file, and as asked the HTTP process and the worker process (each a child
 * process of its own). The warehouse simulator and the SMTP sink, the partners, run in the
 * driver's process. Everything listens on 127.0.0.1 only.
 */
export interface System {
  server: BenchServer;
  /** The driver's own client, for starting baselines and waiting for results. */
  client: Client;
  db: DatabaseHandle;
  warehouse: WarehouseSimulator;
  smtp: SmtpSink;
  http?: Host<HttpHostApi>;
  origins?: Awaited<ReturnType<HttpHostApi['origins']>>;
  worker?: Host<WorkerHostApi>;
  /** Log files of the HTTP and worker processes (their stdout). */
  logs: { http: string; worker: string };
  /** The processes to account CPU to, by role. */
  pids: Record<string, ProcessGroup>;
  stop(): Promise<void>;
}

export interface SystemOptions {
  http?: boolean;
  worker?: boolean;
  /** Worker setting; unset keeps the SDK default. */
  maxCachedWorkflows?: number;
  /** Node flags of the worker process (the memory benchmark wants --expose-gc). */
  workerNodeFlags?: string[];
  /** An already running server to use instead of starting one (the caller stops it). */
  server?: BenchServer;
}

const HOSTS = path.resolve(__dirname, '..', 'hosts');

export async function startSystem(options: SystemOptions): Promise<System> {
  const cleanups: Array<() => Promise<void> | void> = [];
  const stop = async () => {
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup();
      } catch (error) {
        process.stderr.write(
          `cleanup: ${error instanceof Error ? error.message : String(error)}\n`,
        );
      }
    }
  };
  try {
    const server = options.server ?? (await startBenchServer());
    if (!options.server) cleanups.push(() => server.shutdown());
    const temporalEnv = { ...server.env, TEMPORAL_ADDRESS: server.address };
    const temporal = loadTemporalConnection(temporalEnv);
    const connection = await Connection.connect(
      clientConnectionOptions(temporal, { address: server.address }),
    );
    cleanups.push(() => connection.close());
    const client = new Client({ connection, namespace: temporal.namespace });

    const dir = mkdtempSync(path.join(os.tmpdir(), 'order-payments-bench-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const databaseUrl = `sqlite:${path.join(dir, 'app.db')}`;
    const db = createDatabase(databaseUrl);
    cleanups.push(() => db.close());
    await migrateToLatest(db.db);

    const warehouse = createWarehouseSimulator();
    const warehouseUrl = await warehouse.listen(0, '127.0.0.1');
    cleanups.push(() => warehouse.close());
    const smtp = await startSmtpSink();
    cleanups.push(() => smtp.close());

    const logs = { http: path.join(dir, 'http.log'), worker: path.join(dir, 'worker.log') };
    const common = {
      ...temporalEnv,
      DATABASE_URL: databaseUrl,
      NODE_ENV: 'development',
    };
    // A multi-service server counts as one `temporal` (so every table compares like with like),
    // and each of its processes under `temporal:<name>` as well.
    const pids: Record<string, ProcessGroup> = {
      driver: process.pid,
      temporal: server.processes
        ? () => Object.values(server.processes!).flatMap(membersOf)
        : server.pid,
      ...Object.fromEntries(
        Object.entries(server.processes ?? {}).map(([name, group]) => [`temporal:${name}`, group]),
      ),
    };

    let worker: Host<WorkerHostApi> | undefined;
    if (options.worker) {
      const fd = openSync(logs.worker, 'a');
      worker = await startHost<WorkerHostApi>(path.join(HOSTS, 'worker-host.ts'), {
        env: {
          ...common,
          WAREHOUSE_API_URL: warehouseUrl,
          SMTP_URL: smtp.url,
          BENCH_PAYMENTS_BUNDLE: await workflowBundlePath('payments'),
          BENCH_BENCH_BUNDLE: await workflowBundlePath('bench'),
          BENCH_TASK_QUEUE,
          ...(options.maxCachedWorkflows === undefined
            ? {}
            : { BENCH_MAX_CACHED_WORKFLOWS: String(options.maxCachedWorkflows) }),
        },
        nodeFlags: options.workerNodeFlags,
        stdout: fd,
      });
      closeSync(fd);
      cleanups.push(() => worker!.stop());
      pids.worker = worker.pid;
    }

    let http: Host<HttpHostApi> | undefined;
    let origins: System['origins'];
    if (options.http) {
      const fd = openSync(logs.http, 'a');
      http = await startHost<HttpHostApi>(path.join(HOSTS, 'http-host.ts'), {
        env: { ...common, PAYMENT_WEBHOOK_SECRET: BENCH_WEBHOOK_SECRET },
        stdout: fd,
      });
      closeSync(fd);
      cleanups.push(() => http!.stop());
      origins = await http.call('origins', undefined);
      pids.http = http.pid;
    }

    return { server, client, db, warehouse, smtp, http, origins, worker, logs, pids, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

/**
 * Ends the benchmark if it runs longer than `ms` (a hung server must not hang `npm run bench`),
 * running `cleanup` first. Returns a function that disarms it.
 */
export function watchdog(ms: number, cleanup: () => Promise<void>): () => void {
  const timer = setTimeout(() => {
    process.stderr.write(`benchmark exceeded ${Math.round(ms / 1000)} s; stopping\n`);
    void cleanup().finally(() => process.exit(2));
  }, ms);
  timer.unref();
  return () => clearTimeout(timer);
}
