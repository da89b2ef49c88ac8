import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Client } from '@temporalio/client';
import pg from 'pg';
import { createDatabase, migrateToLatest, type DatabaseHandle } from '../../src/db';
import { startSmtpSink, type SmtpSink } from '../../harness/partners/smtp-sink';
import {
  createWarehouseSimulator,
  type WarehouseSimulator,
} from '../../harness/partners/warehouse-simulator';
import { ProcessRegistry, SupervisedProcess } from '../../harness/process/supervisor';
import { startCluster, type TemporalCluster } from './cluster';
import { killGroupsListedIn, startOrphanWatchdog } from '../../harness/process/watchdog';
import { freeClusterPorts } from './config';
import { freePorts } from '../../harness/ports';

/**
 * The system as production runs it, against the multi-service cluster: the worker, the heavy
 * worker and the HTTP server as their own processes (src/worker.ts, src/heavy-worker.ts,
 * src/http/server.ts), configured only through environment variables, reaching Temporal with
 * the standard TEMPORAL_* variables over mTLS. The partners (warehouse simulator, SMTP sink) and
 * the app's database (on the cluster's PostgreSQL, a database of its own) live in the test, so
 * their records are the ground truth.
 */

const ROOT = path.resolve(__dirname, '..', '..');
export const WEBHOOK_SECRET = 'cluster-webhook-secret-0123456789';
export const MAIL_FROM = 'Order Payments <orders@order-payments.local>';
const READY_TIMEOUT_MS = 120_000;

export interface AppStack {
  cluster: TemporalCluster;
  client: Client;
  db: DatabaseHandle;
  warehouse: WarehouseSimulator;
  smtp: SmtpSink;
  baseUrl: string;
  invoiceDir: string;
  /** The app's environment: what `npm run ops` and friends get too. */
  env: NodeJS.ProcessEnv;
  logDir: string;
  stop(): Promise<void>;
}

export async function startAppStack(root: string, log: (line: string) => void): Promise<AppStack> {
  const stops: Array<() => Promise<unknown>> = [];
  const stop = async () => {
    for (const run of stops.reverse()) await run().catch(() => undefined);
  };
  try {
    const cluster = await startCluster({
      root: path.join(root, 'cluster'),
      ports: await freeClusterPorts(),
      log,
    });
    stops.push(() => cluster.stop());
    const connection = await cluster.connect();
    stops.push(() => connection.close());
    const client = new Client({ connection, namespace: cluster.namespace });

    // The app's own database beside Temporal's, as a managed PostgreSQL would host both.
    const admin = new pg.Client({ connectionString: cluster.postgresUrl });
    await admin.connect();
    await admin.query('CREATE DATABASE orders').finally(() => admin.end());
    const databaseUrl = cluster.postgresUrl.replace(/\/postgres$/, '/orders');
    const db = createDatabase(databaseUrl, { poolMax: 4 });
    stops.push(() => db.close());
    await migrateToLatest(db.db);

    const warehouse = createWarehouseSimulator();
    const warehouseUrl = await warehouse.listen(0);
    stops.push(() => warehouse.close());
    const smtp = await startSmtpSink();
    stops.push(() => smtp.close());

    const logDir = path.join(root, 'logs');
    const invoiceDir = path.join(root, 'invoices');
    await fs.mkdir(logDir, { recursive: true });
    // One prebuilt workflow bundle for both workers, as production loads it (npm run build),
    // instead of two webpack runs competing for two cores.
    const bundle = path.join(root, 'workflow-bundle.js');
    await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'src', 'workers', 'workflow-bundle.ts'), bundle],
      { cwd: ROOT },
    );
    const [httpPort, adminPort] = await freePorts(2);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      ...cluster.clientEnv(),
      NODE_ENV: 'development',
      LOG_LEVEL: 'info',
      DATABASE_URL: databaseUrl,
      WAREHOUSE_API_URL: warehouseUrl,
      SMTP_URL: smtp.url,
      MAIL_FROM,
      INVOICE_DIR: invoiceDir,
      EXPORT_DIR: path.join(root, 'exports'),
      WORKFLOW_BUNDLE_PATH: bundle,
      PAYMENT_WEBHOOK_SECRET: WEBHOOK_SECRET,
    };
    const registry = new ProcessRegistry(path.join(root, 'app-pgids'));
    // A jest killed outright must not leave the app's processes behind (their groups are their own).
    const watchdog = startOrphanWatchdog([killGroupsListedIn(path.join(root, 'app-pgids'))]);
    stops.push(async () => watchdog.stop());
    const processes = [
      ['worker', 'src/worker.ts'],
      ['heavy-worker', 'src/heavy-worker.ts'],
      ['http', 'src/http/server.ts'],
    ].map(
      ([name, entry]) =>
        new SupervisedProcess(
          {
            name: name!,
            command: process.execPath,
            args: ['--import', 'tsx', entry!],
            env: {
              ...env,
              HOST: '127.0.0.1',
              PORT: String(httpPort),
              ADMIN_ADDRESS: `127.0.0.1:${adminPort}`,
            },
            cwd: ROOT,
            logFile: path.join(logDir, `${name}.log`),
            restart: false,
            restartDelayMs: 0,
          },
          registry,
        ),
    );
    for (const p of processes) {
      p.start();
      stops.push(() => p.stop('SIGTERM', 15_000));
    }
    const baseUrl = `http://127.0.0.1:${httpPort}`;
    await waitFor(
      'the HTTP server is ready',
      async () => {
        // Ready means: database and Temporal reachable, and the cluster set up for the app.
        const response = await fetch(`http://127.0.0.1:${adminPort}/readyz`);
        if (!response.ok) throw new Error(`/readyz ${response.status}: ${await response.text()}`);
      },
      processes,
    );
    await waitFor(
      'the workers poll',
      async () => {
        for (const queue of ['payments', 'heavy']) {
          const { pollers } = await client.workflowService.describeTaskQueue({
            namespace: cluster.namespace,
            taskQueue: { name: queue },
          });
          if (!pollers?.length) throw new Error(`no poller on ${queue}`);
        }
      },
      processes,
    );
    log(`app up: ${baseUrl}, logs in ${logDir}`);
    return { cluster, client, db, warehouse, smtp, baseUrl, invoiceDir, env, logDir, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

async function waitFor(
  what: string,
  attempt: () => Promise<void>,
  processes: SupervisedProcess[],
): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastError: unknown;
  while (Date.now() < deadline) {
    const dead = processes.find((p) => p.unexpectedExits.length > 0);
    if (dead) throw new Error(`${dead.name} exited while waiting until ${what}`);
    try {
      return await attempt();
    } catch (error) {
      lastError = error;
    }
    await delay(500);
  }
  throw new Error(`timed out waiting until ${what}: ${String(lastError)}`);
}
