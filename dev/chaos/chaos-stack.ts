import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { createDatabase, migrateToLatest, type DatabaseHandle } from '../../src/db';
import { HEAVY_TASK_QUEUE, PAYMENTS_TASK_QUEUE } from '../../src/shared/constants';
import { freePorts } from '../../harness/ports';
import { startSmtpSink, type SmtpSink } from '../../harness/partners/smtp-sink';
import {
  createWarehouseSimulator,
  type WarehouseSimulator,
} from '../../harness/partners/warehouse-simulator';
import type { Arms } from './arms';
import type { ChaosReport } from './chaos-report';
import type { ChaosOptions } from './options';
import { createChaosPostgres, type ChaosPostgres } from '../../harness/postgres/cluster';
import {
  appEnvironment,
  hookedWorkerSpec,
  httpProcessSpec,
} from '../../harness/process/app-processes';
import {
  type ProcessRegistry,
  SupervisedProcess,
  type ProcessSpec,
} from '../../harness/process/supervisor';
import { devServerArgs, temporalCliPath, waitForTemporal } from './temporal-server';
import { startWatchdog } from './watchdog';
import type { ChaosPoint, HookMessage } from '../../harness/hooks/worker-hook';

/**
 * The system under a chaos run, started once: PostgreSQL (crash-stoppable), the Temporal CLI dev
 * server (restarted by its supervisor after a kill), the warehouse and mail peers, the workers
 * with the chaos hook, and the HTTP process; and the hook's line that gets a worker SIGKILLed.
 */

const ROOT = path.resolve(__dirname, '..', '..');
export const NAMESPACE = 'default';
export const WEBHOOK_SECRET = 'chaos-webhook-secret-0123456789';
export const MAIL_FROM = 'Order Payments <orders@order-payments.local>';
export const READY_TIMEOUT_MS = 120_000;

export interface Dirs {
  run: string;
  logs: string;
  arm: string;
  invoices: string;
}

export interface StackContext {
  options: ChaosOptions;
  arms: Arms;
  dirs: Dirs;
  registry: ProcessRegistry;
  processes: SupervisedProcess[];
  cleanups: Array<{ name: string; run: () => unknown }>;
  report: ChaosReport;
  log: (line: string) => void;
  signal: AbortSignal;
}

export interface Stack {
  db: DatabaseHandle;
  postgres: ChaosPostgres;
  stopPostgresSync: () => void;
  client: Client;
  temporal: SupervisedProcess;
  temporalAddress: string;
  /** Payment workers first, then heavy ones: every process a random kill may pick. */
  workers: SupervisedProcess[];
  baseUrl: string;
  warehouse: WarehouseSimulator;
  smtp: SmtpSink;
}

/** PostgreSQL, Temporal, the warehouse and mail peers, the workers and the HTTP process. */
export async function startStack(ctx: StackContext): Promise<Stack> {
  const { options, arms, dirs, registry, processes, cleanups, report, log, signal } = ctx;
  const [pgPort, temporalPort, httpPort] = await freePorts(3);
  const supervise = (spec: ProcessSpec) => {
    const supervised = new SupervisedProcess(spec, registry);
    processes.push(supervised);
    return supervised;
  };

  const postgres = createChaosPostgres(path.join(dirs.run, 'pg'), pgPort!);
  const [pgFile, ...pgArgs] = postgres.stopImmediateCommand;
  const stopPostgresSync = () => {
    if (!postgres.isRunning()) return;
    try {
      execFileSync(pgFile!, pgArgs, { stdio: 'ignore' });
    } catch {
      // Already stopping.
    }
  };
  startWatchdog(dirs.run, postgres.stopImmediateCommand);
  await postgres.start();
  cleanups.push({ name: 'postgres', run: () => postgres.stopImmediately() });
  const db = createDatabase(postgres.url, { poolMax: 4, onPoolError: () => undefined });
  cleanups.push({ name: 'driver database pool', run: () => db.close() });
  await migrateToLatest(db.db);
  log(`PostgreSQL on port ${pgPort}`);

  // Warehouse and mail peers live here, so their logs are the ground truth of what went out.
  const warehouse = createWarehouseSimulator();
  const warehouseUrl = await warehouse.listen(0);
  cleanups.push({ name: 'warehouse simulator', run: () => warehouse.close() });
  const smtp = await startSmtpSink();
  cleanups.push({ name: 'smtp sink', run: () => smtp.close() });

  // Temporal: the CLI dev server with file persistence; the supervisor restarts it after a kill.
  const temporalAddress = `127.0.0.1:${temporalPort}`;
  mkdirSync(path.join(dirs.run, 'temporal'));
  const temporal = supervise({
    name: 'temporal',
    command: await temporalCliPath(log),
    args: devServerArgs({
      port: temporalPort!,
      dbFile: path.join(dirs.run, 'temporal', 'temporal.db'),
      namespace: NAMESPACE,
    }),
    env: process.env,
    cwd: dirs.run,
    logFile: path.join(dirs.logs, 'temporal.log'),
    restart: true,
    restartDelayMs: 1_000,
  });
  temporal.start();
  await waitForTemporal(temporalAddress, NAMESPACE, READY_TIMEOUT_MS);
  log(`Temporal dev server at ${temporalAddress}`);
  const connection = await Connection.connect({ address: temporalAddress });
  cleanups.push({ name: 'temporal client', run: () => connection.close() });
  const client = new Client({ connection, namespace: NAMESPACE });

  const appEnv = appEnvironment({
    temporalAddress,
    namespace: NAMESPACE,
    databaseUrl: postgres.url,
    mailFrom: MAIL_FROM,
    warehouseUrl,
    smtpUrl: smtp.url,
    invoiceDir: dirs.invoices,
    exportDir: path.join(dirs.run, 'exports'),
    armDir: dirs.arm,
    holdMs: options.holdMs,
  });
  // Production loads a prebuilt workflow bundle (npm run build); so do the workers here, when the
  // system can build one. Otherwise every restart runs webpack for seconds of CPU.
  const bundleScript = path.join(ROOT, 'src', 'workers', 'workflow-bundle.ts');
  if (existsSync(bundleScript)) {
    const bundle = path.join(dirs.run, 'workflow-bundle.js');
    await promisify(execFile)(process.execPath, ['--import', 'tsx', bundleScript, bundle], {
      cwd: ROOT,
    });
    appEnv.WORKFLOW_BUNDLE_PATH = bundle;
    log(`workflow bundle built: ${bundle}`);
  }
  const onControlLine = (line: string, worker: SupervisedProcess) =>
    onHookMessage(line, worker, { arms, report, log });
  const workerSpec = (name: string, entry: string): ProcessSpec =>
    hookedWorkerSpec({
      name,
      entry,
      env: appEnv,
      logDir: dirs.logs,
      restartDelayMs: options.restartDelayMs,
      onControlLine,
    });
  const workers = Array.from({ length: options.workers }, (_, i) =>
    supervise(workerSpec(`worker-${i + 1}`, 'src/worker.ts')),
  );
  // The invoice worker (task queue `heavy`) exists in newer versions of the system only.
  const heavyEntry = path.join(ROOT, 'src', 'heavy-worker.ts');
  report.heavyWorkers = existsSync(heavyEntry) ? options.heavyWorkers : 0;
  for (let i = 0; i < report.heavyWorkers; i++) {
    workers.push(supervise(workerSpec(`heavy-worker-${i + 1}`, 'src/heavy-worker.ts')));
  }
  const http = supervise(
    httpProcessSpec({
      env: appEnv,
      port: httpPort!,
      secret: WEBHOOK_SECRET,
      logDir: dirs.logs,
      restartDelayMs: options.restartDelayMs,
    }),
  );
  for (const worker of workers) worker.start();
  http.start();
  const baseUrl = `http://127.0.0.1:${httpPort}`;
  await Promise.all([
    waitForHttp(baseUrl, signal),
    waitForPollers(client, PAYMENTS_TASK_QUEUE, options.workers, signal),
    waitForPollers(client, HEAVY_TASK_QUEUE, report.heavyWorkers, signal),
  ]);
  log(
    `${options.workers} payment worker(s) and ${report.heavyWorkers} heavy worker(s) polling, HTTP at ${baseUrl}`,
  );
  return {
    db,
    postgres,
    stopPostgresSync,
    client,
    temporal,
    temporalAddress,
    workers,
    baseUrl,
    warehouse,
    smtp,
  };
}

/** A worker froze at an armed moment: SIGKILL it now, before it can go on. */
function onHookMessage(
  line: string,
  worker: SupervisedProcess,
  { arms, report, log }: { arms: Arms; report: ChaosReport; log: (line: string) => void },
): void {
  let message: HookMessage;
  try {
    message = JSON.parse(line) as HookMessage;
  } catch {
    return;
  }
  if (message.type === 'pass') return;
  if (message.type === 'released') {
    report.holdsReleased += 1;
    log(`${worker.name} carried on at ${message.point}: no SIGKILL came in time`);
    return;
  }
  const { type: _type, point, ...details } = message;
  // The declared crash points are armed by the enumerated run only (./crash-points.ts).
  if (!isChaosPoint(point)) return;
  arms.fired(point);
  if (worker.pid !== message.pid || !worker.kill('SIGKILL')) return;
  report.kills.push({ ...details, kind: point, at: Date.now(), worker: worker.name });
  log(
    `SIGKILL ${worker.name} at ${point}` +
      (message.eventId ? `, event ${message.eventId}` : '') +
      (message.orderId !== undefined ? `, order ${message.orderId}` : '') +
      (message.attempt !== undefined ? `, attempt ${message.attempt}` : ''),
  );
}

function isChaosPoint(point: string): point is ChaosPoint {
  return point === 'payment-commit' || point === 'warehouse-201' || point === 'mail-stamp';
}

export async function waitForHttp(baseUrl: string, signal: AbortSignal): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    try {
      const response = await fetch(new URL('/healthz', baseUrl));
      if (response.ok) return;
    } catch {
      // Not listening yet.
    }
    await delay(250, undefined, { signal });
  }
  throw new Error(
    `the HTTP process did not answer at ${baseUrl} within ${READY_TIMEOUT_MS / 1000}s`,
  );
}

async function waitForPollers(
  client: Client,
  taskQueue: string,
  count: number,
  signal: AbortSignal,
): Promise<void> {
  if (count === 0) return;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const queue = await client.workflowService.describeTaskQueue({
      namespace: NAMESPACE,
      taskQueue: { name: taskQueue },
    });
    if (new Set(queue.pollers?.map((p) => p.identity)).size >= count) return;
    await delay(500, undefined, { signal });
  }
  throw new Error(
    `fewer than ${count} workers polled ${taskQueue} within ${READY_TIMEOUT_MS / 1000}s`,
  );
}
