import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { Client, Connection } from '@temporalio/client';
import { createDatabase, migrateToLatest, type DatabaseHandle } from '../../src/db';
import { HEAVY_TASK_QUEUE, PAYMENTS_TASK_QUEUE } from '../../src/shared/constants';
import { startSmtpSink, type SmtpSink } from '../../harness/partners/smtp-sink';
import {
  startStripeApiDouble,
  type StripeApiDouble,
} from '../../harness/partners/stripe-api-double';
import {
  createWarehouseSimulator,
  type WarehouseSimulator,
} from '../../harness/partners/warehouse-simulator';
import { waitForHttp } from './chaos-stack';
import { spawnWatchdog } from './watchdog';
import { freePorts } from '../../harness/ports';
import { createChaosPostgres, type ChaosPostgres } from '../../harness/postgres/cluster';
import {
  appEnvironment,
  hookedWorkerSpec,
  httpProcessSpec,
  operatorCliSpec,
} from '../../harness/process/app-processes';
import {
  ProcessRegistry,
  SupervisedProcess,
  type ProcessSpec,
} from '../../harness/process/supervisor';
import { devServerArgs, temporalCliPath, waitForTemporal } from './temporal-server';
import type { HookMessage } from '../../harness/hooks/worker-hook';

/**
 * The processes of the crash matrix for one database, started once and kept for every row: the
 * Temporal CLI dev server, the database, the partners (warehouse simulator, SMTP sink, alert
 * webhook), the HTTP process and one payment and one heavy worker with the chaos preload. Only a
 * killed worker restarts between rows; operator commands and migrations run as one-shot
 * processes of the stack.
 */

export type Database = 'sqlite' | 'postgres';
/**
 * What happens at the point: the worker is SIGKILLed (the list's main run); or, while the worker
 * is frozen there, the Temporal server is SIGKILLed and comes back only after the worker resumed
 * (at a reply point: the moment the activity reports); or PostgreSQL is crash-stopped
 * (connection refused), or frozen with SIGSTOP (every statement hangs), until after the worker
 * resumed.
 */
export type Fault = 'worker-kill' | 'temporal-restart' | 'db-down' | 'db-hung';

export const NAMESPACE = 'default';
export const WEBHOOK_SECRET = 'crash-points-webhook-secret-0123456789';
/** The key the workers fetch thin events with, from the stack's Stripe API double. */
export const STRIPE_API_KEY = 'sk_test_crash_points_double';
export const MAIL_FROM = 'Order Payments <orders@order-payments.local>';
export const READY_TIMEOUT_MS = 120_000;
// How long the frozen worker waits for its SIGKILL: the driver reads the line in milliseconds.
export const HOLD_MS = 10_000;

export interface Alert {
  at: number;
  idempotencyKey: string | undefined;
  orderId: number | null;
  kind: string | undefined;
}

export interface Hold {
  message: Extract<HookMessage, { type: 'hold' }>;
  worker: string;
  killed: boolean;
  /** When the hold was reported (ms): the worker froze there, and was killed at once if at all. */
  at: number;
  /** When the worker carried on by itself (no kill came): the hook's 'released' line. */
  released?: number;
}

export type Pass = Extract<HookMessage, { type: 'pass' }>;

export interface Stack {
  database: Database;
  fault: Fault;
  temporal: SupervisedProcess;
  temporalAddress: string;
  postgres: ChaosPostgres | undefined;
  db: DatabaseHandle;
  client: Client;
  warehouse: WarehouseSimulator;
  smtp: SmtpSink;
  /** Where the workers fetch thin events' objects (STRIPE_API_BASE_URL). */
  stripeApi: StripeApiDouble;
  alerts: Alert[];
  baseUrl: string;
  armDir: string;
  dataDir: string;
  /** Every hold a worker reported, and who reported it. */
  holds: Hold[];
  /** Every declared point a worker passed, armed or not. */
  passes: Pass[];
  workers: SupervisedProcess[];
  /** A process of the stack's that is not restarted (a migration); stopped with the stack. */
  oneShot: (spec: ProcessSpec) => SupervisedProcess;
  logDir: string;
  /** What a clean migration leaves, for the migration rows (computed by the first). */
  referenceSchema?: string;
  /**
   * The points a clean migration passes on this database (computed with referenceSchema): the
   * dialects differ in statements per migration, and the matrix's rows are SQLite's.
   */
  migrationPoints?: ReadonlySet<string>;
  /** An operator CLI command with the operator hook, not started yet; stopped with the stack. */
  operatorCli: (
    name: string,
    args: string[],
    onControlLine: (line: string, cli: SupervisedProcess) => void,
  ) => SupervisedProcess;
  /** Every process ID started (the test checks none survives). */
  pids: () => number[];
  stop: () => Promise<void>;
}

export async function startStack(
  database: Database,
  dir: string,
  bundle: string,
  fault: Fault,
  log: (line: string) => void,
): Promise<Stack> {
  const dirs = {
    logs: path.join(dir, 'logs'),
    arm: path.join(dir, 'arm'),
    temporal: path.join(dir, 'temporal'),
    data: dir,
  };
  for (const d of Object.values(dirs)) mkdirSync(d, { recursive: true });
  chmodSync(dir, 0o755);
  const registry = new ProcessRegistry(path.join(dir, 'pgids'));
  const processes: SupervisedProcess[] = [];
  const cleanups: Array<() => unknown> = [];
  const stop = async () => {
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup();
      } catch (error) {
        log(`cleanup failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    registry.killAllSync();
    stopWatchdog();
  };
  let stopWatchdog = () => undefined as void;
  try {
    const [pgPort, temporalPort, httpPort] = await freePorts(3);
    let databaseUrl: string;
    let postgres: ChaosPostgres | undefined;
    if (database === 'postgres') {
      postgres = createChaosPostgres(path.join(dir, 'pg'), pgPort!);
      stopWatchdog = spawnWatchdog(dir, postgres.stopImmediateCommand);
      await postgres.start();
      const [file, ...args] = postgres.stopImmediateCommand;
      const cluster = postgres;
      cleanups.push(() => cluster.stopImmediately());
      process.once('exit', () => {
        if (cluster.isRunning()) execFileSync(file!, args, { stdio: 'ignore' });
      });
      databaseUrl = postgres.url;
    } else {
      stopWatchdog = spawnWatchdog(dir, ['true']);
      databaseUrl = `sqlite:${path.join(dir, 'app.db')}`;
    }
    const db = createDatabase(databaseUrl, { poolMax: 2, onPoolError: () => undefined });
    cleanups.push(() => db.close());
    await migrateToLatest(db.db);

    const warehouse = createWarehouseSimulator();
    const warehouseUrl = await warehouse.listen(0);
    cleanups.push(() => warehouse.close());
    const smtp = await startSmtpSink();
    cleanups.push(() => smtp.close());
    const stripeApi = await startStripeApiDouble();
    cleanups.push(() => stripeApi.close());
    const alerts: Alert[] = [];
    const alertSink = await startAlertSink(alerts);
    cleanups.push(() => new Promise((resolve) => alertSink.server.close(resolve)));

    const supervise = (spec: ProcessSpec) => {
      const supervised = new SupervisedProcess(spec, registry);
      processes.push(supervised);
      return supervised;
    };
    const temporalAddress = `127.0.0.1:${temporalPort}`;
    const temporal = supervise({
      name: 'temporal',
      command: await temporalCliPath(log),
      args: devServerArgs({
        port: temporalPort!,
        dbFile: path.join(dirs.temporal, 'temporal.db'),
        namespace: NAMESPACE,
      }),
      env: process.env,
      cwd: dir,
      logFile: path.join(dirs.logs, 'temporal.log'),
      restart: true,
      restartDelayMs: 500,
    });
    temporal.start();
    await waitForTemporal(temporalAddress, NAMESPACE, READY_TIMEOUT_MS);
    const connection = await Connection.connect({ address: temporalAddress });
    cleanups.push(() => connection.close());
    const client = new Client({ connection, namespace: NAMESPACE });

    const appEnv = {
      ...appEnvironment({
        temporalAddress,
        namespace: NAMESPACE,
        databaseUrl,
        mailFrom: MAIL_FROM,
        warehouseUrl,
        smtpUrl: smtp.url,
        invoiceDir: path.join(dir, 'invoices'),
        exportDir: path.join(dir, 'exports'),
        armDir: dirs.arm,
        holdMs: HOLD_MS,
      }),
      ALERT_WEBHOOK_URL: alertSink.url,
      WORKFLOW_BUNDLE_PATH: bundle,
      STRIPE_API_KEY: STRIPE_API_KEY,
      STRIPE_API_BASE_URL: stripeApi.url,
      // The double is a test-mode account.
      STRIPE_LIVEMODE: 'false',
    };
    const holds: Hold[] = [];
    const passes: Pass[] = [];
    const onControlLine = (line: string, worker: SupervisedProcess) => {
      let message: HookMessage;
      try {
        message = JSON.parse(line) as HookMessage;
      } catch {
        return;
      }
      if (message.type === 'pass') {
        passes.push(message);
        return;
      }
      if (message.type === 'released') {
        const held = holds.filter((h) => h.message.pid === message.pid && !h.released).pop();
        if (held) held.released = Date.now();
        return;
      }
      // Killed at once, from this callback: the worker is frozen at the point until then.
      const killed =
        fault === 'worker-kill' && worker.pid === message.pid && worker.kill('SIGKILL');
      holds.push({ message, worker: worker.name, killed, at: Date.now() });
    };
    const worker = (name: string, entry: string) =>
      supervise(
        hookedWorkerSpec({
          name,
          entry,
          env: appEnv,
          logDir: dirs.logs,
          restartDelayMs: 100,
          onControlLine,
        }),
      );
    const workers = [
      worker('worker', 'src/worker.ts'),
      worker('heavy-worker', 'src/heavy-worker.ts'),
    ];
    const http = supervise(
      httpProcessSpec({
        env: appEnv,
        port: httpPort!,
        secret: WEBHOOK_SECRET,
        logDir: dirs.logs,
        restartDelayMs: 500,
      }),
    );
    for (const p of [...workers, http]) p.start();
    const baseUrl = `http://127.0.0.1:${httpPort}`;
    const abort = new AbortController();
    await Promise.all([
      waitForHttp(baseUrl, abort.signal),
      waitForPollers(client, PAYMENTS_TASK_QUEUE),
      waitForPollers(client, HEAVY_TASK_QUEUE),
    ]);
    return {
      database,
      fault,
      temporal,
      temporalAddress,
      postgres,
      db,
      client,
      warehouse,
      smtp,
      stripeApi,
      alerts,
      baseUrl,
      armDir: dirs.arm,
      dataDir: dir,
      holds,
      passes,
      workers,
      oneShot: supervise,
      logDir: dirs.logs,
      operatorCli: (name, args, onControlLine) =>
        supervise(operatorCliSpec({ name, args, env: appEnv, logDir: dirs.logs, onControlLine })),
      pids: () => processes.flatMap((p) => p.pids),
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** The alert webhook: records each POST (Slack answers 200 and keeps no key). */
async function startAlertSink(alerts: Alert[]): Promise<{ server: Server; url: string }> {
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          alert?: { order_id?: number | null; kind?: string };
        };
        alerts.push({
          at: Date.now(),
          idempotencyKey: request.headers['idempotency-key'] as string | undefined,
          orderId: body.alert?.order_id ?? null,
          kind: body.alert?.kind,
        });
      } catch {
        alerts.push({
          at: Date.now(),
          idempotencyKey: undefined,
          orderId: null,
          kind: 'unreadable',
        });
      }
      response.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || !address) throw new Error('alert sink has no port');
  return { server, url: `http://127.0.0.1:${address.port}/alerts` };
}

async function waitForPollers(client: Client, taskQueue: string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const queue = await client.workflowService.describeTaskQueue({
      namespace: NAMESPACE,
      taskQueue: { name: taskQueue },
    });
    if ((queue.pollers?.length ?? 0) > 0) return;
    await delay(250);
  }
  throw new Error(`no worker polled ${taskQueue} within ${READY_TIMEOUT_MS / 1000}s`);
}
