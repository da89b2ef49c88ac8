import { execFile, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { setMaxListeners } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import {
  createDatabase,
  createOrdersRepository,
  migrateToLatest,
  type DatabaseHandle,
} from '../../src/db';
import { confirmationMessageId } from '../../src/mail/order-confirmation';
import { startSmtpSink, type SmtpSink } from '../partners/smtp-sink';
import { HEAVY_TASK_QUEUE, PAYMENTS_TASK_QUEUE } from '../../src/shared/constants';
import { createWarehouseSimulator, type WarehouseSimulator } from '../partners/warehouse-simulator';
import { gatherEvidence, type PlannedOrder } from './evidence';
import { checkInvariants, type Disruption, type Verdict } from './invariants';
import type { ChaosOptions } from './options';
import { createChaosPostgres, type ChaosPostgres } from './postgres-cluster';
import {
  deliverEvent,
  emptyDeliveryStats,
  type DeliveryStats,
  type PaymentEvent,
} from './provider';
import { Arms } from './arms';
import { freePorts } from '../net/ports';
import { createRandom, type Random } from './random';
import { ProcessRegistry, SupervisedProcess, type ProcessSpec } from './supervisor';
import { devServerArgs, temporalCliPath, waitForTemporal } from './temporal-server';
import { appEnvironment, hookedWorkerSpec, httpProcessSpec } from './processes';
import type { ChaosPoint, HookMessage } from './worker-hook';

/**
 * The chaos run: the real system (Temporal CLI dev server, PostgreSQL, worker processes from
 * src/worker.ts, the HTTP process from src/http/server.ts) under a stream of webhook deliveries,
 * while workers are SIGKILLed (at random and at chosen moments), the Temporal server is
 * SIGKILLed and restarted, and PostgreSQL is crash-stopped. Then every invariant is checked.
 * Everything it starts, it stops: on success, on error, and on abort (Ctrl-C).
 */

const ROOT = path.resolve(__dirname, '..', '..');
const NAMESPACE = 'default';
const WEBHOOK_SECRET = 'chaos-webhook-secret-0123456789';
const MAIL_FROM = 'Order Payments <orders@order-payments.local>';
const READY_TIMEOUT_MS = 120_000;
// What a run writes besides its logs; deleted at the end unless --keep.
const DATA_DIRS = ['pg', 'temporal', 'invoices', 'exports'];
// Between two kills at the same kind of moment.
const ARM_PAUSE_MS = 3_000;

export type KillKind = 'random' | ChaosPoint;

export interface WorkerKill {
  kind: KillKind;
  at: number;
  worker: string;
  pid: number;
  eventId?: string;
  orderId?: number;
  workflowId?: string;
  activityType?: string;
  attempt?: number;
}

/** What became of a payment whose worker was killed right after its row committed. */
export interface CommitWindowOutcome {
  eventId: string;
  orderId: number | undefined;
  killedAttempt: number | undefined;
  /** The attempt recorded as completed in the history. */
  completedAttempt: number | undefined;
  /**
   * The kill hit the window when another worker's completion was recorded: the killed one had
   * committed the row and never reported it. (Attempt numbers cannot tell for a local activity:
   * the worker that takes over counts its attempts afresh.)
   */
  hit: boolean;
  /** What the workflow concluded: did it still hand the payment over to fulfilment? */
  created: boolean | undefined;
  shipped: boolean;
}

/** A payment row committed by an attempt whose completion never reached Temporal. */
export interface UnreportedCommit {
  eventId: string;
  orderId: number;
  /** Seconds since the storm began when the row was written. */
  committedAtS: number | undefined;
  completedAttempt: number | undefined;
  previousAttemptFailure: string | undefined;
  /** The first disruption at or after the commit (within 15 s): the likely cause. */
  cause: string | undefined;
}

export interface ChaosReport {
  options: ChaosOptions;
  runDir: string;
  startedAt: number;
  /** When the first webhook went out: the origin of the times in the report. */
  stormStartedAt: number | undefined;
  durationMs: number;
  events: number;
  orders: number;
  doubleChargedOrders: number;
  /** Heavy (invoice) workers run: 0 when the system has none. */
  heavyWorkers: number;
  deliveries: DeliveryStats;
  kills: WorkerKill[];
  /** Worker freezes at an armed moment that no SIGKILL followed (the driver was too slow). */
  holdsReleased: number;
  armedNotTriggered: Record<ChaosPoint, number>;
  serverRestarts: Array<{ at: number; downMs: number; readyAfterMs: number }>;
  dbOutages: Array<{ at: number; downMs: number }>;
  /** Skipped chaos actions (e.g. no worker was running to kill). */
  skipped: string[];
  workerStarts: number;
  /** Every process the run started (all gone by the time the report is returned). */
  pids: number[];
  unexpectedExits: Array<{
    process: string;
    /** Seconds since the storm began (negative: during start-up). */
    atS: number;
    code: number | null;
    signal: string | null;
    reason: string | undefined;
  }>;
  commitWindow: CommitWindowOutcome[];
  /** Payment workflows whose recordPayment needed more than one attempt (any cause). */
  recordPaymentRetried: number;
  /** recordPayment retries by the failure that caused them (as the history kept the last one). */
  recordPaymentRetryCauses: Record<string, number>;
  /**
   * Payment workflows that ended `created: false` although no other execution existed for
   * their event: an earlier attempt of their own committed the row and never reported it.
   */
  unreportedCommits: UnreportedCommit[];
  /** Temporary files of atomic invoice writes that a killed attempt left behind. */
  strayTempFiles: number;
  converged: boolean;
  convergenceMs: number;
  verdict: Verdict | undefined;
  /** Why the run could not be judged (set up failed, aborted…). */
  error: string | undefined;
}

export interface RunChaosOptions {
  options: ChaosOptions;
  /** Progress lines. */
  log?: (line: string) => void;
  /** Aborting stops the run and cleans up (Ctrl-C). */
  signal?: AbortSignal;
}

export async function runChaos({
  options,
  log = (line) => process.stderr.write(`[chaos] ${line}\n`),
  signal = new AbortController().signal,
}: RunChaosOptions): Promise<ChaosReport> {
  const startedAt = Date.now();
  // Every pending delivery and wait listens to it: hundreds at once are expected, not a leak.
  setMaxListeners(0, signal);
  const runDir = mkdtempSync(path.join(tmpdir(), 'order-payments-chaos-'));
  // PostgreSQL runs as its own user when we are root: it must be able to reach its directory.
  chmodSync(runDir, 0o755);
  const dirs = {
    run: runDir,
    logs: path.join(runDir, 'logs'),
    arm: path.join(runDir, 'arm'),
    invoices: path.join(runDir, 'invoices'),
  };
  mkdirSync(dirs.logs);
  mkdirSync(dirs.arm);
  log(`run directory ${runDir} (logs in ${dirs.logs}), seed ${options.seed}`);

  const report = emptyReport(options, runDir, startedAt);
  const arms = new Arms(dirs.arm, ARM_PAUSE_MS);
  const registry = new ProcessRegistry(path.join(runDir, 'pgids'));
  const processes: SupervisedProcess[] = [];
  const cleanups: Array<{ name: string; run: () => unknown }> = [];
  let stopPostgresSync: (() => void) | undefined;
  // Last resort if this process exits without reaching `finally` (a second Ctrl-C).
  const onExit = () => {
    registry.killAllSync();
    stopPostgresSync?.();
  };
  process.on('exit', onExit);

  try {
    const stack = await startStack({
      options,
      arms,
      dirs,
      registry,
      processes,
      cleanups,
      report,
      log,
      signal,
    });
    stopPostgresSync = stack.stopPostgresSync;
    const random = createRandom(options.seed);
    const { orders, events } = await planOrders(stack.db, options, random);
    report.orders = orders.length;
    report.doubleChargedOrders = orders.filter((o) => o.eventIds.length > 1).length;
    log(
      `${orders.length} orders (${report.doubleChargedOrders} paid twice), ${events.length} events`,
    );

    const accepted = new Set<string>();
    const disruptions = await storm({
      stack,
      arms,
      events,
      accepted,
      random,
      options,
      dirs,
      report,
      log,
      signal,
    });
    const chaosEnd = Date.now();
    report.converged = await waitForConvergence(
      stack.client,
      events,
      options.convergenceTimeoutMs,
      signal,
      log,
    );
    report.convergenceMs = Date.now() - chaosEnd;
    // Armed moments stay armed while the workflows settle; what is left now never came.
    report.armedNotTriggered = arms.disarmAll();
    await judge({ stack, processes, orders, accepted, disruptions, options, dirs, report });
  } catch (error) {
    report.error = signal.aborted
      ? 'aborted'
      : error instanceof Error
        ? (error.stack ?? error.message)
        : String(error);
  } finally {
    report.workerStarts = processes
      .filter((p) => p.name.includes('worker'))
      .reduce((sum, p) => sum + p.starts, 0);
    for (const p of processes) {
      for (const exit of p.unexpectedExits) {
        report.unexpectedExits.push({
          process: p.name,
          atS: Math.round((exit.at - (report.stormStartedAt ?? startedAt)) / 100) / 10,
          code: exit.code,
          signal: exit.signal,
          reason: exit.reason,
        });
      }
    }
    await Promise.all(processes.map((p) => p.stop('SIGKILL')));
    report.pids = processes.flatMap((p) => p.pids);
    for (const { name, run } of cleanups.reverse()) {
      try {
        await run();
      } catch (error) {
        log(`cleanup of ${name} failed: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    registry.killAllSync();
    stopWatchdog();
    process.off('exit', onExit);
    if (!options.keep) {
      for (const dir of DATA_DIRS) {
        rmSync(path.join(runDir, dir), { recursive: true, force: true });
      }
    }
    report.durationMs = Date.now() - startedAt;
  }
  return report;
}

function emptyReport(options: ChaosOptions, runDir: string, startedAt: number): ChaosReport {
  return {
    options,
    runDir,
    startedAt,
    stormStartedAt: undefined,
    durationMs: 0,
    events: options.events,
    orders: 0,
    doubleChargedOrders: 0,
    heavyWorkers: 0,
    deliveries: emptyDeliveryStats(),
    kills: [],
    holdsReleased: 0,
    armedNotTriggered: { 'payment-commit': 0, 'warehouse-201': 0, 'mail-stamp': 0 },
    serverRestarts: [],
    dbOutages: [],
    skipped: [],
    workerStarts: 0,
    pids: [],
    unexpectedExits: [],
    commitWindow: [],
    recordPaymentRetried: 0,
    recordPaymentRetryCauses: {},
    unreportedCommits: [],
    strayTempFiles: 0,
    converged: false,
    convergenceMs: 0,
    verdict: undefined,
    error: undefined,
  };
}

// ---------------------------------------------------------------------------------------------
// The system under test

interface Dirs {
  run: string;
  logs: string;
  arm: string;
  invoices: string;
}

interface StackContext {
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

interface Stack {
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
async function startStack(ctx: StackContext): Promise<Stack> {
  const { options, arms, dirs, registry, processes, cleanups, report, log, signal } = ctx;
  const [pgPort, temporalPort, httpPort] = await freePorts(3);
  const supervise = (spec: ProcessSpec) => {
    const supervised = new SupervisedProcess(spec, registry);
    processes.push(supervised);
    return supervised;
  };

  // PostgreSQL, crash-stoppable.
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

  // The processes under test, as production starts them, plus the chaos hook in the workers.
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

// ---------------------------------------------------------------------------------------------
// The storm

interface StormContext {
  stack: Stack;
  arms: Arms;
  events: PaymentEvent[];
  accepted: Set<string>;
  random: Random;
  options: ChaosOptions;
  dirs: Dirs;
  report: ChaosReport;
  log: (line: string) => void;
  signal: AbortSignal;
}

/** Webhook deliveries and chaos actions side by side; returns when both are over. */
async function storm(ctx: StormContext): Promise<Disruption[]> {
  const { stack, events, accepted, random, options, report, log, signal } = ctx;
  const disruptions: Disruption[] = [];
  const chaosStart = Date.now();
  report.stormStartedAt = chaosStart;
  const deliveriesDone = deliverAll(events, {
    baseUrl: stack.baseUrl,
    secret: WEBHOOK_SECRET,
    random,
    stats: report.deliveries,
    accepted,
    windowMs: options.deliveryWindowMs,
    signal,
  });
  // If the chaos fails, the deliveries still must end before the stack is torn down.
  try {
    for (const action of planActions(options, random)) {
      const wait = chaosStart + action.at - Date.now();
      if (wait > 0) await delay(wait, undefined, { signal });
      await runAction(action, { ...ctx, disruptions });
    }
  } finally {
    await deliveriesDone;
  }
  log(
    `chaos over after ${seconds(Date.now() - chaosStart)}: ${accepted.size}/${events.length} events accepted; waiting for every workflow to complete`,
  );
  return disruptions;
}

async function runAction(
  action: ChaosAction,
  ctx: StormContext & { disruptions: Disruption[] },
): Promise<void> {
  const { stack, random, report, log, signal, disruptions } = ctx;
  switch (action.kind) {
    case 'worker-kill': {
      const running = stack.workers.filter((w) => w.alive);
      if (running.length === 0) {
        report.skipped.push('random worker kill: no worker was running');
        return;
      }
      const worker = random.pick(running);
      const pid = worker.pid!;
      worker.kill('SIGKILL');
      report.kills.push({ kind: 'random', at: Date.now(), worker: worker.name, pid });
      log(`SIGKILL ${worker.name} (pid ${pid}) at a random moment`);
      return;
    }
    case 'arm': {
      ctx.arms.add(action.point);
      log(`armed ${action.point}`);
      return;
    }
    case 'server-restart': {
      const at = Date.now();
      stack.temporal.kill('SIGKILL', action.downMs);
      log(`SIGKILL Temporal server; restarting it in ${seconds(action.downMs)}`);
      await stack.temporal.exited();
      await waitForTemporal(stack.temporalAddress, NAMESPACE, READY_TIMEOUT_MS);
      const readyAfterMs = Date.now() - at;
      report.serverRestarts.push({ at, downMs: action.downMs, readyAfterMs });
      disruptions.push({ from: at, to: Date.now(), what: 'Temporal server restart' });
      log(`Temporal server back after ${seconds(readyAfterMs)}`);
      return;
    }
    case 'db-outage': {
      const at = Date.now();
      await stack.postgres.stopImmediately();
      log(`PostgreSQL stopped (immediate) for ${seconds(action.downMs)}`);
      await delay(action.downMs, undefined, { signal });
      await stack.postgres.start();
      report.dbOutages.push({ at, downMs: Date.now() - at });
      disruptions.push({ from: at, to: Date.now(), what: 'PostgreSQL outage' });
      log(`PostgreSQL back after ${seconds(Date.now() - at)}`);
      return;
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The judgement

async function judge(ctx: {
  stack: Stack;
  processes: SupervisedProcess[];
  orders: PlannedOrder[];
  accepted: ReadonlySet<string>;
  disruptions: Disruption[];
  options: ChaosOptions;
  dirs: Dirs;
  report: ChaosReport;
}): Promise<void> {
  const { stack, processes, orders, accepted, disruptions, options, dirs, report } = ctx;
  for (const kill of report.kills) {
    disruptions.push({ from: kill.at, to: kill.at, what: `SIGKILL ${kill.worker} (${kill.kind})` });
  }
  // Unexpected exits (crashes) are disruptions too: they can hit the same windows as our kills.
  for (const p of processes) {
    for (const exit of p.unexpectedExits) {
      disruptions.push({ from: exit.at, to: exit.at, what: `${p.name} crashed` });
    }
  }
  const invoiceFiles = existsSync(dirs.invoices) ? readdirSync(dirs.invoices) : [];
  report.strayTempFiles = invoiceFiles.filter((f) => f.endsWith('.tmp')).length;
  const evidence = await gatherEvidence({
    db: stack.db,
    client: stack.client,
    orders,
    acceptedEventIds: accepted,
    warehouseRequests: stack.warehouse.requests,
    shipments: [...stack.warehouse.shipments.values()],
    mails: stack.smtp.messages,
    invoiceFiles:
      report.heavyWorkers > 0 ? invoiceFiles.filter((f) => !f.endsWith('.tmp')) : undefined,
  });
  report.verdict = checkInvariants(evidence, {
    confirmationMessageId: (orderId) => confirmationMessageId(orderId, MAIL_FROM),
    disruptions,
    strictMail: options.strictMail,
  });

  const shippedOrders = new Set(evidence.shipments.map((s) => s.orderId));
  for (const kill of report.kills) {
    if (kill.kind !== 'payment-commit' || kill.eventId === undefined) continue;
    const workflow = evidence.paymentWorkflows.get(kill.eventId);
    const completedAttempt = workflow?.recordPaymentAttempt;
    report.commitWindow.push({
      eventId: kill.eventId,
      orderId: kill.orderId,
      killedAttempt: kill.attempt,
      completedAttempt,
      hit:
        workflow?.recordPaymentCompletedBy !== undefined &&
        !workflow.recordPaymentCompletedBy.startsWith(`${kill.pid}@`),
      created: workflow?.result?.created,
      shipped: kill.orderId !== undefined && shippedOrders.has(kill.orderId),
    });
  }
  const workflows = [...evidence.paymentWorkflows.values()];
  report.recordPaymentRetried = workflows.filter((w) => (w.recordPaymentAttempt ?? 1) > 1).length;
  for (const w of workflows) {
    if ((w.recordPaymentAttempt ?? 1) <= 1) continue;
    const cause = failureKind(w.recordPaymentLastFailure);
    report.recordPaymentRetryCauses[cause] = (report.recordPaymentRetryCauses[cause] ?? 0) + 1;
  }
  const origin = report.stormStartedAt ?? report.startedAt;
  // Each event has exactly one execution here (the server never forgot a workflow ID), so a
  // `created: false` can only come from an earlier attempt of the same execution.
  for (const order of orders) {
    for (const eventId of order.eventIds) {
      const workflow = evidence.paymentWorkflows.get(eventId);
      if (workflow?.result?.created !== false) continue;
      const committedAt = evidence.paymentCreatedAt.get(eventId);
      const cause = committedAt === undefined ? undefined : likelyCause(disruptions, committedAt);
      report.unreportedCommits.push({
        eventId,
        orderId: order.id,
        committedAtS:
          committedAt === undefined ? undefined : Math.round((committedAt - origin) / 100) / 10,
        completedAttempt: workflow.recordPaymentAttempt,
        previousAttemptFailure: workflow.recordPaymentLastFailure,
        cause,
      });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The plan

type ChaosAction =
  | { at: number; kind: 'worker-kill' }
  | { at: number; kind: 'arm'; point: ChaosPoint }
  | { at: number; kind: 'server-restart'; downMs: number }
  | { at: number; kind: 'db-outage'; downMs: number };

/** Chaos actions at random moments; sequential, so outages never overlap one another. */
function planActions(options: ChaosOptions, random: Random): ChaosAction[] {
  const window = options.deliveryWindowMs;
  const end = window + options.chaosTailMs;
  const between = (from: number, to: number) => random.int(Math.round(from), Math.round(to));
  const actions: ChaosAction[] = [];
  const repeat = (n: number, make: () => ChaosAction) => {
    for (let i = 0; i < n; i++) actions.push(make());
  };
  repeat(options.workerKills, () => ({ at: between(0.1 * window, end), kind: 'worker-kill' }));
  // Payments are recorded while events arrive: arm that moment inside the delivery window.
  repeat(options.commitKills, () => ({
    at: between(0.1 * window, 0.7 * window),
    kind: 'arm',
    point: 'payment-commit',
  }));
  repeat(options.warehouseKills, () => ({
    at: between(0.15 * window, 0.9 * window),
    kind: 'arm',
    point: 'warehouse-201',
  }));
  repeat(options.mailKills, () => ({
    at: between(0.15 * window, 0.9 * window),
    kind: 'arm',
    point: 'mail-stamp',
  }));
  repeat(options.serverRestarts, () => ({
    at: between(0.2 * window, end - options.serverDownMs[1]),
    kind: 'server-restart',
    downMs: between(...options.serverDownMs),
  }));
  repeat(options.dbOutages, () => ({
    at: between(0.2 * window, end - options.dbDownMs[1]),
    kind: 'db-outage',
    downMs: between(...options.dbDownMs),
  }));
  return actions.sort((a, b) => a.at - b.at);
}

/** Orders in the database (as the shop created them), and the payment events for them. */
async function planOrders(
  db: DatabaseHandle,
  options: ChaosOptions,
  random: Random,
): Promise<{ orders: PlannedOrder[]; events: PaymentEvent[] }> {
  const repository = createOrdersRepository(db.db);
  const orders: PlannedOrder[] = [];
  const events: PaymentEvent[] = [];
  const runTag = options.seed.toString(36);
  while (events.length < options.events) {
    const userId = random.int(1, Math.max(1, options.users));
    const amount = random.int(5, 500) * 100;
    const { order } = await repository.createWithIdempotencyKey({
      userId,
      customerEmail: `customer${userId}@example.com`,
      totalAmount: amount,
      idempotencyKey: `chaos-${runTag}-${orders.length + 1}`,
    });
    const paidTwice =
      events.length + 2 <= options.events && random.chance(options.doubleChargeRate);
    const planned: PlannedOrder = { id: order.id, userId, amount, eventIds: [] };
    for (let i = 0; i < (paidTwice ? 2 : 1); i++) {
      const id = `evt_chaos_${runTag}_${events.length + 1}`;
      planned.eventIds.push(id);
      events.push({ id, orderId: order.id, amount });
    }
    orders.push(planned);
  }
  return { orders, events };
}

/** First deliveries at random moments over the window; each event 2–3 times (see provider.ts). */
async function deliverAll(
  events: PaymentEvent[],
  options: Omit<Parameters<typeof deliverEvent>[1], 'signal'> & {
    windowMs: number;
    signal: AbortSignal;
  },
): Promise<void> {
  await Promise.all(
    events.map(async (event) => {
      await delay(options.random.int(0, options.windowMs), undefined, { signal: options.signal });
      await deliverEvent(event, options);
    }),
  );
}

// ---------------------------------------------------------------------------------------------
// Waiting

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

/** True once nothing runs and every payment workflow has closed; false at the deadline. */
async function waitForConvergence(
  client: Client,
  events: PaymentEvent[],
  timeoutMs: number,
  signal: AbortSignal,
  log: (line: string) => void,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let lastReport = 0;
  for (;;) {
    try {
      const [running, closed] = await Promise.all([
        client.workflow.count('ExecutionStatus = "Running"'),
        client.workflow.count('WorkflowType = "paymentWorkflow" AND ExecutionStatus != "Running"'),
      ]);
      if (running.count === 0 && closed.count >= events.length) return true;
      if (Date.now() - lastReport > 10_000) {
        lastReport = Date.now();
        log(
          `${running.count} workflow(s) running, ${closed.count}/${events.length} payments closed`,
        );
      }
    } catch {
      // Visibility not answering for a moment: ask again.
    }
    if (Date.now() > deadline) return false;
    await delay(1_000, undefined, { signal });
  }
}

// ---------------------------------------------------------------------------------------------
// Processes

let stopCurrentWatchdog: (() => void) | undefined;

/**
 * A detached shell that outlives us only if we die without cleaning up (SIGKILL, OOM): it then
 * kills every process group we had running, crash-stops PostgreSQL and deletes the databases.
 */
export function startWatchdog(runDir: string, stopPostgres: string[]): void {
  stopCurrentWatchdog = spawnWatchdog(runDir, stopPostgres);
}

export function stopWatchdog(): void {
  stopCurrentWatchdog?.();
  stopCurrentWatchdog = undefined;
}

/** The watchdog of one run directory (`<runDir>/pgids`); returns what stops it. */
export function spawnWatchdog(runDir: string, stopPostgres: string[]): () => void {
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  const script = [
    `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done`,
    `for g in $(cat ${quote(path.join(runDir, 'pgids'))} 2>/dev/null); do kill -9 -"$g" 2>/dev/null; done`,
    `${stopPostgres.map(quote).join(' ')} >/dev/null 2>&1`,
    `rm -rf ${DATA_DIRS.map((d) => quote(path.join(runDir, d))).join(' ')}`,
  ].join('; ');
  const watchdog = spawn('sh', ['-c', script], { detached: true, stdio: 'ignore' });
  watchdog.unref();
  return () => {
    if (watchdog.pid === undefined) return;
    try {
      process.kill(-watchdog.pid, 'SIGKILL');
    } catch {
      // Gone already.
    }
  };
}

/**
 * What most likely kept a committed attempt from reporting: the first kill or crash after the
 * commit (the clocks of worker and driver are the same machine's), else an outage under way.
 */
function likelyCause(disruptions: readonly Disruption[], committedAt: number): string | undefined {
  const soon = (d: Disruption) => d.to >= committedAt - 50 && d.from <= committedAt + 15_000;
  const instant = disruptions
    .filter((d) => d.from === d.to && d.from >= committedAt - 50 && soon(d))
    .sort((a, b) => a.from - b.from)[0];
  return (instant ?? disruptions.find((d) => d.from !== d.to && soon(d)))?.what;
}

/** A short name for an activity failure, to count retries by cause. */
function failureKind(message: string | undefined): string {
  if (!message) return 'unknown';
  if (/timeout|timed out/i.test(message)) return 'activity timeout (worker gone or too slow)';
  if (/ECONNREFUSED|terminated|connect|shutdown|database system/i.test(message)) {
    return 'database unavailable';
  }
  return message.slice(0, 60);
}

function seconds(ms: number): string {
  return `${(ms / 1000).toFixed(1)} s`;
}
