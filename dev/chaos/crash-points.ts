import { execFile, execFileSync } from 'node:child_process';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import {
  CRASH_POINTS,
  type CrashPhase,
  type CrashPointName,
} from '../../src/activities/crash-points';
import { invoiceFile } from '../../src/activities/invoice-activities';
import {
  createDatabase,
  createOrdersRepository,
  migrateToLatest,
  type DatabaseHandle,
} from '../../src/db';
import { signBody } from '../../src/http/signature';
import { PAYMENT_WEBHOOK_PATH } from '../../src/http/routes/payment-webhook';
import { confirmationMessageId } from '../../src/mail/order-confirmation';
import {
  HEAVY_TASK_QUEUE,
  PAYMENT_SUCCEEDED_EVENT,
  PAYMENTS_TASK_QUEUE,
  paymentWorkflowId,
} from '../../src/shared/constants';
import { EXPORT_FILE, EXPORT_INDEX_FILE, exportWorkflowId } from '../../src/shared/export';
import { startSmtpSink, type SmtpSink } from '../partners/smtp-sink';
import { createWarehouseSimulator, type WarehouseSimulator } from '../partners/warehouse-simulator';
import { freePorts, spawnWatchdog, waitForHttp } from './driver';
import { createChaosPostgres, type ChaosPostgres } from './postgres-cluster';
import { ProcessRegistry, SupervisedProcess, type ProcessSpec } from './supervisor';
import { devServerArgs, temporalCliPath, waitForTemporal } from './temporal-server';
import { localActivityType } from './evidence';
import { appEnvironment, hookedWorkerSpec, httpProcessSpec } from './processes';
import type { CrashArm, HookMessage } from './worker-hook';

/**
 * The enumerated crash run: for every crash point declared in src/activities/crash-points.ts,
 * on each side of it, one scenario that reaches it runs against the real processes (Temporal CLI
 * dev server, src/worker.ts, src/heavy-worker.ts, src/http/server.ts, with the chaos preload), the
 * point is armed, the worker that reaches it freezes there and is SIGKILLed, a new one takes over,
 * and once every workflow has closed the outcome is counted and judged. The servers are started
 * once per database; per point only the killed worker restarts.
 */

export type Scenario = 'payment' | 'double-charge' | 'warehouse-rejects' | 'export' | 'stock';
export type Database = 'sqlite' | 'postgres';
/**
 * What happens at the point: the worker is SIGKILLed (the list's main run); or, while the worker
 * is frozen there, the Temporal server is SIGKILLed and comes back only after the worker resumed
 * (at a reply point: the moment the activity reports); or PostgreSQL is crash-stopped
 * (connection refused), or frozen with SIGSTOP (every statement hangs), until after the worker
 * resumed.
 */
export type Fault = 'worker-kill' | 'temporal-restart' | 'db-down' | 'db-hung';

export interface PointRun {
  point: CrashPointName;
  phase: CrashPhase;
  scenario: Scenario;
}

/** What reaches each activity: the failure paths need their own scenario. */
const SCENARIOS: Record<string, Scenario[]> = {
  recordPayment: ['payment'],
  handOverToOrder: ['payment'],
  notifyWarehouse: ['payment'],
  // Once on the way to a shipment, once in the compensation after the warehouse refused.
  setShipmentStatus: ['payment', 'warehouse-rejects'],
  orderEventHandledBy: ['payment'],
  markOrderEventHandled: ['payment', 'warehouse-rejects'],
  // Refunds: no scenario of this runner delivers one yet (test/workflows/refunds.test.ts).
  recordRefund: [],
  handOverRefundToOrder: [],
  applyRefunds: [],
  requestReturnReview: [],
  reverseLoyaltyPoints: [],
  requestRefundReview: ['double-charge'],
  sendOrderConfirmation: ['payment'],
  awardLoyaltyPoints: ['payment'],
  deliverAlert: ['warehouse-rejects'],
  generateInvoicePdf: ['payment'],
  planOrderExport: ['export'],
  exportOrdersChunk: ['export'],
  finishOrderExport: ['export'],
  aggregateStock: ['stock'],
};

/** Every run of the full list: each point on both sides (a reply only before), per scenario. */
export function allPointRuns(): PointRun[] {
  return (Object.keys(CRASH_POINTS) as CrashPointName[]).flatMap((point) => {
    const declaration = CRASH_POINTS[point];
    const phases: CrashPhase[] = declaration.kind === 'reply' ? ['before'] : ['before', 'after'];
    const scenarios = SCENARIOS[declaration.activity];
    if (!scenarios) throw new Error(`no scenario reaches ${point} (${declaration.activity})`);
    return scenarios.flatMap((scenario) => phases.map((phase) => ({ point, phase, scenario })));
  });
}

/**
 * A fixed-size share of the list that moves on with `rotation` (npm test passes the day number):
 * consecutive days take consecutive slices, so the whole list comes round every few days.
 */
export function rotatingShare(
  runs: readonly PointRun[],
  size: number,
  rotation: number,
): PointRun[] {
  if (size >= runs.length) return [...runs];
  const start = (rotation * size) % runs.length;
  return Array.from({ length: size }, (_, i) => runs[(start + i) % runs.length]!);
}

export function armName(run: Pick<PointRun, 'point' | 'phase'>): CrashArm {
  return `${run.point}@${run.phase}`;
}

export interface Counts {
  payments: number;
  shipments: number;
  /** Copies of the confirmation (same Message-ID) and mails with any other Message-ID. */
  mails: number;
  otherMails: number;
  ledger: number;
  alerts: number;
  /** Scenario-specific: invoice file, refund flag, export rows, snapshots. */
  extra: string;
  /** When each copy of the confirmation, and each alert, arrived (ms). */
  mailTimes: number[];
  alertTimes: number[];
}

/** A database outage, from its start to the database answering again (ms). */
interface Outage {
  from: number;
  to: number;
}

export interface PointOutcome {
  database: Database;
  fault: Fault;
  run: PointRun;
  hit: boolean;
  /** What the history (or the kill) shows. */
  evidence: string;
  counts: Counts | undefined;
  problems: string[];
  /** The documented duplicate mail: the same Message-ID after a crash between 250 and stamp. */
  documentedDuplicate: boolean;
  verdict: 'PASS' | 'FAIL';
  durationMs: number;
}

export interface CrashPointReport {
  outcomes: PointOutcome[];
  startedAt: number;
  durationMs: number;
  /** Per database: start-up of the servers and workers. */
  setupMs: Partial<Record<Database, number>>;
  runDir: string;
  fault: Fault;
  /** Every process the run started (all gone by the time the report is returned). */
  pids: number[];
  error: string | undefined;
}

export interface CrashPointOptions {
  databases: Database[];
  runs: PointRun[];
  log?: (line: string) => void;
  signal?: AbortSignal;
  /** Keep the run directory (logs) after success. */
  keep?: boolean;
  /** Default: worker-kill. */
  fault?: Fault;
}

const ROOT = path.resolve(__dirname, '..', '..');
const NAMESPACE = 'default';
const WEBHOOK_SECRET = 'crash-points-webhook-secret-0123456789';
const MAIL_FROM = 'Order Payments <orders@order-payments.local>';
const AMOUNT = 5400;
const READY_TIMEOUT_MS = 120_000;
// How long the frozen worker waits for its SIGKILL: the driver reads the line in milliseconds.
const HOLD_MS = 10_000;
// Long enough for the slowest retry after a kill: a mail's 15 s start-to-close timeout, then its
// backoff, then the rest of the order.
const SETTLE_TIMEOUT_MS = 90_000;
const HIT_TIMEOUT_MS = 60_000;

export async function runCrashPoints(options: CrashPointOptions): Promise<CrashPointReport> {
  const log = options.log ?? ((line: string) => process.stderr.write(`[crash-points] ${line}\n`));
  const signal = options.signal ?? new AbortController().signal;
  const startedAt = Date.now();
  const runDir = mkdtempSync(path.join(tmpdir(), 'order-payments-crash-points-'));
  chmodSync(runDir, 0o755);
  const report: CrashPointReport = {
    outcomes: [],
    startedAt,
    durationMs: 0,
    setupMs: {},
    runDir,
    fault: options.fault ?? 'worker-kill',
    pids: [],
    error: undefined,
  };
  log(
    `run directory ${runDir}; ${options.runs.length} point(s) on ${options.databases.join(', ')}`,
  );
  try {
    const bundle = path.join(runDir, 'workflow-bundle.js');
    await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', path.join(ROOT, 'src', 'workers', 'workflow-bundle.ts'), bundle],
      { cwd: ROOT },
    );
    // One stack per database, side by side: a point mostly waits for a timeout on the server.
    await Promise.all(
      options.databases.map(async (database) => {
        const setupStarted = Date.now();
        const stack = await startStack(
          database,
          path.join(runDir, database),
          bundle,
          options.fault ?? 'worker-kill',
          log,
        );
        try {
          report.setupMs[database] = Date.now() - setupStarted;
          log(`${database}: stack up in ${seconds(report.setupMs[database])}`);
          for (const run of options.runs) {
            signal.throwIfAborted();
            const outcome = await runPoint(stack, database, run, log);
            report.outcomes.push(outcome);
            log(
              `${database} ${armName(run)} (${run.scenario}): ${outcome.verdict}, hit ${outcome.hit ? 'yes' : 'no'}, ` +
                `${outcome.evidence}${outcome.problems.length ? `; ${outcome.problems.join('; ')}` : ''} ` +
                `(${seconds(outcome.durationMs)})`,
            );
          }
        } finally {
          await stack.stop();
          report.pids.push(...stack.pids());
        }
      }),
    );
  } catch (error) {
    report.error = error instanceof Error ? (error.stack ?? error.message) : String(error);
  } finally {
    const failed = report.error !== undefined || report.outcomes.some((o) => o.verdict === 'FAIL');
    if (!failed && !options.keep) rmSync(runDir, { recursive: true, force: true });
    report.durationMs = Date.now() - startedAt;
  }
  return report;
}

// ---------------------------------------------------------------------------------------------
// The stack of one database

interface Alert {
  at: number;
  idempotencyKey: string | undefined;
  orderId: number | null;
  kind: string | undefined;
}

interface Hold {
  message: Extract<HookMessage, { type: 'hold' }>;
  worker: string;
  killed: boolean;
  /** When the worker carried on by itself (no kill came): the hook's 'released' line. */
  released?: number;
}

interface Stack {
  database: Database;
  fault: Fault;
  temporal: SupervisedProcess;
  temporalAddress: string;
  postgres: ChaosPostgres | undefined;
  db: DatabaseHandle;
  client: Client;
  warehouse: WarehouseSimulator;
  smtp: SmtpSink;
  alerts: Alert[];
  baseUrl: string;
  armDir: string;
  dataDir: string;
  /** Every hold a worker reported, and who reported it. */
  holds: Hold[];
  workers: SupervisedProcess[];
  /** Every process ID started (the test checks none survives). */
  pids: () => number[];
  stop: () => Promise<void>;
}

async function startStack(
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
    };
    const holds: Hold[] = [];
    const onControlLine = (line: string, worker: SupervisedProcess) => {
      let message: HookMessage;
      try {
        message = JSON.parse(line) as HookMessage;
      } catch {
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
      holds.push({ message, worker: worker.name, killed });
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
      alerts,
      baseUrl,
      armDir: dirs.arm,
      dataDir: dir,
      holds,
      workers,
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

// ---------------------------------------------------------------------------------------------
// One point

let sequence = 0;

async function runPoint(
  stack: Stack,
  database: Database,
  run: PointRun,
  log: (line: string) => void,
): Promise<PointOutcome> {
  const started = Date.now();
  const outcome: PointOutcome = {
    database,
    fault: stack.fault,
    run,
    hit: false,
    evidence: '',
    counts: undefined,
    problems: [],
    documentedDuplicate: false,
    verdict: 'FAIL',
    durationMs: 0,
  };
  const arm = armName(run);
  const armFile = path.join(stack.armDir, arm);
  const holdsBefore = stack.holds.length;
  try {
    sequence += 1;
    const tag = `${Date.now().toString(36)}_${sequence}`;
    const scenario = await prepare(stack, run.scenario, tag);
    writeFileSync(armFile, '');
    const root = await scenario.trigger();
    const hold = await waitForHold(stack, holdsBefore);
    rmSync(armFile, { force: true });
    if (!hold) outcome.problems.push(`the point was not reached within ${HIT_TIMEOUT_MS / 1000} s`);
    else if (stack.fault === 'worker-kill' && !hold.killed)
      outcome.problems.push(`${hold.worker} reported the hold but was not killed`);
    const injected =
      hold && stack.fault !== 'worker-kill' ? await injectFault(stack, hold) : undefined;
    await settle(stack.client, root);
    outcome.counts = await scenario.count();
    const outage = injected?.outage;
    outcome.problems.push(...scenario.judge(outcome.counts, run, outage));
    if (injected) {
      outcome.hit = injected.hit;
      outcome.evidence = injected.text;
      if (!injected.hit) outcome.problems.push('the fault did not overlap the hold');
    } else if (hold) {
      const evidence = await historyEvidence(stack.client, hold.message);
      outcome.hit = hold.killed && evidence.hit;
      outcome.evidence = `${hold.worker} killed at ${hold.message.activityType ?? '?'} attempt ${hold.message.attempt ?? '?'}; ${evidence.text}`;
      if (!evidence.hit) outcome.problems.push('the history does not show the killed attempt lost');
    } else {
      outcome.evidence = 'not reached';
    }
    outcome.documentedDuplicate =
      explainedDuplicate(outcome.counts.mailTimes, mayDuplicateMail(run, stack.fault), outage) ||
      explainedDuplicate(outcome.counts.alertTimes, mayDuplicateAlert(run, stack.fault), outage);
  } catch (error) {
    outcome.problems.push(error instanceof Error ? error.message : String(error));
    log(
      `${armName(run)}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
  } finally {
    rmSync(armFile, { force: true });
  }
  outcome.verdict = outcome.problems.length === 0 ? 'PASS' : 'FAIL';
  outcome.durationMs = Date.now() - started;
  return outcome;
}

/**
 * The one window where a crash sends the confirmation twice (docs/exactly-once.md): the SMTP
 * server said 250 and `confirmation_sent_at` is not stamped yet. Both sides name that moment. A
 * database outage that starts before the send can last past it, so the stamp fails after the 250
 * and the retry sends again: the same window, held open by the outage.
 */
function mayDuplicateMail(run: Pick<PointRun, 'point' | 'phase'>, fault: Fault): boolean {
  return mayDuplicate(run, fault, 'sendOrderConfirmation.smtp', 'sendOrderConfirmation.stamp');
}

/** The same window for an alert: the webhook said 2xx, the delivery is not stamped yet. */
function mayDuplicateAlert(run: Pick<PointRun, 'point' | 'phase'>, fault: Fault): boolean {
  return mayDuplicate(run, fault, 'deliverAlert.post', 'deliverAlert.stamp');
}

/**
 * Two copies, explained: the point is in the window, or a database outage overlapped the time
 * between the copies (the first went out before the database was back, the second after the
 * outage began). The second is how a database outage holds open the window of a mail or alert in
 * flight beside the point (the invoice runs beside the confirmation), which the stamp after the
 * send cannot close (docs/exactly-once.md).
 */
function explainedDuplicate(
  times: readonly number[],
  inWindow: boolean,
  outage: Outage | undefined,
): boolean {
  if (times.length !== 2) return false;
  const [first, second] = [...times].sort((a, b) => a - b) as [number, number];
  return inWindow || (outage !== undefined && first <= outage.to && second >= outage.from);
}

function mayDuplicate(
  run: Pick<PointRun, 'point' | 'phase'>,
  fault: Fault,
  send: CrashPointName,
  stamp: CrashPointName,
): boolean {
  const arm = armName(run);
  const window = [`${send}@after`, `${stamp}@before`];
  if (fault === 'db-down' || fault === 'db-hung') window.push(`${send}@before`);
  return window.includes(arm);
}

/**
 * The fault, while the worker is frozen at the point, lasting until after it carried on by itself
 * (the hook's hold time): so what the worker does next (report, or the next effect) meets it.
 */
async function injectFault(
  stack: Stack,
  hold: Hold,
): Promise<{ hit: boolean; text: string; outage: Outage | undefined }> {
  const where = `${hold.worker} held at ${hold.message.activityType ?? '?'} attempt ${hold.message.attempt ?? '?'}`;
  const down = Date.now();
  let frozen: number[] = [];
  if (stack.fault === 'temporal-restart') {
    // Restarted by hand below; the supervisor's own restart comes too late to matter.
    stack.temporal.kill('SIGKILL', 10 * 60_000);
    await stack.temporal.exited();
  } else if (!stack.postgres) {
    throw new Error(`${stack.fault} needs PostgreSQL`);
  } else if (stack.fault === 'db-down') {
    await stack.postgres.stopImmediately();
  } else {
    frozen = postgresPids(stack.postgres.dataDir);
    for (const pid of frozen) process.kill(pid, 'SIGSTOP');
  }
  const stopped = Date.now();
  const deadline = Date.now() + HOLD_MS + 5_000;
  while (hold.released === undefined && Date.now() < deadline) await delay(50);
  // A moment for the worker to meet the outage (its report, or the next statement); a hung
  // statement must outlast the client's query timeout (6 s).
  await delay(stack.fault === 'db-hung' ? 8_000 : 1_000);
  if (stack.fault === 'temporal-restart') {
    stack.temporal.start();
    await waitForTemporal(stack.temporalAddress, NAMESPACE, READY_TIMEOUT_MS);
  } else if (stack.fault === 'db-down') {
    await stack.postgres!.start();
  } else {
    for (const pid of frozen) signalQuietly(pid, 'SIGCONT');
  }
  const hit = hold.released !== undefined && hold.released > stopped;
  const what = {
    'temporal-restart': 'Temporal server SIGKILLed',
    'db-down': 'PostgreSQL stopped (immediate)',
    'db-hung': `PostgreSQL frozen (SIGSTOP of ${frozen.length} processes)`,
  }[stack.fault as Exclude<Fault, 'worker-kill'>];
  return {
    hit,
    outage: stack.fault === 'temporal-restart' ? undefined : { from: down, to: Date.now() },
    text: `${what} while ${where}; worker resumed ${hold.released === undefined ? 'never' : `${seconds(hold.released - stopped)} into the outage`}; back after ${seconds(Date.now() - down)}`,
  };
}

/** The postmaster (first line of postmaster.pid) and every server process it started. */
function postgresPids(dataDir: string): number[] {
  const postmaster = Number(
    readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n')[0],
  );
  const children = execFileSync('pgrep', ['-P', String(postmaster)], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map(Number);
  return [postmaster, ...children];
}

function signalQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {
    // Gone already.
  }
}

async function waitForHold(stack: Stack, from: number) {
  const deadline = Date.now() + HIT_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const hold = stack.holds[from];
    if (hold) return hold;
    await delay(20);
  }
  return undefined;
}

/** Until the root workflow has closed and nothing runs in the namespace. */
async function settle(client: Client, root: WorkflowHandle): Promise<void> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  for (;;) {
    try {
      const description = await root.describe();
      if (description.status.name !== 'RUNNING') {
        const running = await client.workflow.count('ExecutionStatus = "Running"');
        if (running.count === 0) return;
      }
    } catch {
      // Not visible yet, or the server answers slowly: ask again.
    }
    if (Date.now() > deadline) {
      throw new Error(`workflows still running ${SETTLE_TIMEOUT_MS / 1000} s after the kill`);
    }
    await delay(200);
  }
}

interface PreparedScenario {
  trigger: () => Promise<WorkflowHandle>;
  count: () => Promise<Counts>;
  judge: (counts: Counts, run: PointRun, outage: Outage | undefined) => string[];
}

async function prepare(stack: Stack, scenario: Scenario, tag: string): Promise<PreparedScenario> {
  if (scenario === 'export') return prepareExport(stack, tag);
  if (scenario === 'stock') return prepareStock(stack, tag);
  const orders = createOrdersRepository(stack.db.db);
  const { order } = await orders.createWithIdempotencyKey({
    userId: 1,
    customerEmail: `buyer-${tag}@example.com`,
    totalAmount: AMOUNT,
    idempotencyKey: `crash-${tag}`,
  });
  const event = (n: number) => `evt_crash_${tag}_${n}`;
  if (scenario === 'double-charge') {
    // The first payment fulfils the order before the point is armed; the second is the double.
    await settle(stack.client, await deliver(stack, event(1), order.id));
  }
  if (scenario === 'warehouse-rejects') {
    stack.warehouse.setMode({ kind: 'reject', status: 400 }, 1);
  }
  const expected = expectations(scenario);
  return {
    trigger: () => deliver(stack, event(scenario === 'double-charge' ? 2 : 1), order.id),
    count: () => countOrder(stack, order.id),
    judge: (counts, run, outage) => {
      const problems: string[] = [];
      const want = (what: keyof Counts, value: number, actual: number) => {
        if (actual !== value) problems.push(`${what} ${actual}, expected ${value}`);
      };
      want('payments', expected.payments, counts.payments);
      want('shipments', expected.shipments, counts.shipments);
      const mailWindow = mayDuplicateMail(run, stack.fault);
      const mails = explainedDuplicate(counts.mailTimes, mailWindow, outage) ? 1 : counts.mails;
      want('mails', expected.mails, mails);
      want('otherMails', 0, counts.otherMails);
      want('ledger', expected.ledger, counts.ledger);
      // A repeated alert carries the same Idempotency-Key (one failed run, one key).
      const alertWindow = mayDuplicateAlert(run, stack.fault);
      const alerts = explainedDuplicate(counts.alertTimes, alertWindow, outage) ? 1 : counts.alerts;
      want('alerts', expected.alerts, alerts);
      if (counts.extra !== expected.extra)
        problems.push(`${counts.extra}, expected ${expected.extra}`);
      return problems;
    },
  };
}

function expectations(scenario: Scenario): Omit<Counts, 'otherMails' | 'mailTimes' | 'alertTimes'> {
  switch (scenario) {
    case 'double-charge':
      return {
        payments: 2,
        shipments: 1,
        mails: 1,
        ledger: 1,
        alerts: 1,
        extra: 'invoice, review, requested',
      };
    case 'warehouse-rejects':
      return {
        payments: 1,
        shipments: 0,
        mails: 0,
        ledger: 0,
        alerts: 1,
        extra: 'no invoice, no review, failed',
      };
    default:
      return {
        payments: 1,
        shipments: 1,
        mails: 1,
        ledger: 1,
        alerts: 0,
        extra: 'invoice, no review, requested',
      };
  }
}

async function deliver(stack: Stack, eventId: string, orderId: number): Promise<WorkflowHandle> {
  const raw = JSON.stringify({
    id: eventId,
    event: PAYMENT_SUCCEEDED_EVENT,
    order_id: orderId,
    amount: AMOUNT,
  });
  for (let attempt = 1; attempt <= 40; attempt++) {
    try {
      const response = await fetch(new URL(PAYMENT_WEBHOOK_PATH, stack.baseUrl), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-payment-signature': signBody(raw, WEBHOOK_SECRET),
        },
        body: raw,
        signal: AbortSignal.timeout(15_000),
      });
      await response.text();
      if (response.status === 200)
        return stack.client.workflow.getHandle(paymentWorkflowId(eventId));
      if (response.status !== 503) throw new Error(`webhook answered ${response.status}`);
    } catch (error) {
      if (error instanceof Error && error.message.startsWith('webhook answered')) throw error;
    }
    await delay(250);
  }
  throw new Error(`webhook for ${eventId} never accepted`);
}

async function countOrder(stack: Stack, orderId: number): Promise<Counts> {
  const db = stack.db.db;
  const count = async (table: 'payments' | 'loyalty_ledger') => {
    const row = await db
      .selectFrom(table)
      .where('order_id', '=', orderId)
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .executeTakeFirstOrThrow();
    return Number(row.n);
  };
  const order = await createOrdersRepository(db).findById(orderId);
  const messageId = confirmationMessageId(orderId, MAIL_FROM);
  const toOrder = stack.smtp.messages.filter((m) =>
    m.envelopeTo.includes(order?.customerEmail ?? ''),
  );
  const invoice = existsSync(invoiceFile(path.join(stack.dataDir, 'invoices'), orderId));
  const row = await db
    .selectFrom('orders')
    .where('id', '=', orderId)
    .select(['refund_review_requested_at', 'shipment_status'])
    .executeTakeFirst();
  return {
    payments: await count('payments'),
    shipments: [...stack.warehouse.shipments.values()].filter((s) => s.orderId === orderId).length,
    mails: toOrder.filter((m) => m.messageId === messageId).length,
    mailTimes: toOrder
      .filter((m) => m.messageId === messageId)
      .map((m) => Date.parse(m.receivedAt)),
    alertTimes: stack.alerts.filter((a) => a.orderId === orderId).map((a) => a.at),
    otherMails: toOrder.filter((m) => m.messageId !== messageId).length,
    ledger: await count('loyalty_ledger'),
    alerts: stack.alerts.filter((a) => a.orderId === orderId).length,
    extra: [
      invoice ? 'invoice' : 'no invoice',
      row?.refund_review_requested_at ? 'review' : 'no review',
      row?.shipment_status ?? 'no shipment status',
    ].join(', '),
  };
}

async function prepareExport(stack: Stack, tag: string): Promise<PreparedScenario> {
  const exportId = `crash-${tag}`;
  const orders = await stack.db.db
    .selectFrom('orders')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  const total = Number(orders.n);
  const dir = path.join(stack.dataDir, 'exports', exportId);
  return {
    trigger: () =>
      stack.client.workflow.start('exportOrdersWorkflow', {
        taskQueue: HEAVY_TASK_QUEUE,
        workflowId: exportWorkflowId(exportId),
        // Two chunks at least, so a chunk's crash is followed by another chunk.
        args: [{ exportId, chunkSize: Math.max(1, Math.ceil(total / 2)) }],
      }),
    count: async () => {
      const csv = existsSync(path.join(dir, EXPORT_FILE))
        ? readFileSync(path.join(dir, EXPORT_FILE), 'utf8').split('\r\n').filter(Boolean)
        : [];
      const ids = csv.slice(1).map((line) => line.split(',')[0]);
      return {
        ...noOrderCounts(),
        extra: `rows ${ids.length}/${total}, distinct ${new Set(ids).size}, index ${existsSync(path.join(dir, EXPORT_INDEX_FILE)) ? 'yes' : 'no'}`,
      };
    },
    judge: (counts) => {
      const want = `rows ${total}/${total}, distinct ${total}, index yes`;
      return counts.extra === want ? [] : [`${counts.extra}, expected ${want}`];
    },
  };
}

async function prepareStock(stack: Stack, tag: string): Promise<PreparedScenario> {
  // A slot of its own per run: a minute in the past that no other run names.
  const scheduledAt = new Date(Date.UTC(2020, 0, 1) + sequence * 60_000).toISOString();
  return {
    trigger: () =>
      stack.client.workflow.start('aggregateStockWorkflow', {
        taskQueue: PAYMENTS_TASK_QUEUE,
        workflowId: `crash-stock-${tag}`,
        args: [{ scheduledAt }],
      }),
    count: async () => {
      const rows = await stack.db.db.selectFrom('stock_snapshots').select(['taken_at']).execute();
      const same = rows.filter((r) => new Date(String(r.taken_at)).toISOString() === scheduledAt);
      return { ...noOrderCounts(), extra: `snapshots ${same.length}` };
    },
    judge: (counts) => (counts.extra === 'snapshots 1' ? [] : [`${counts.extra}, expected 1`]),
  };
}

function noOrderCounts(): Counts {
  return {
    payments: 0,
    shipments: 0,
    mails: 0,
    otherMails: 0,
    ledger: 0,
    alerts: 0,
    extra: '',
    mailTimes: [],
    alertTimes: [],
  };
}

// ---------------------------------------------------------------------------------------------
// Evidence

type History = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>;

/**
 * Did the killed attempt never report? An activity's ActivityTaskStarted event is written when it
 * closes, with the attempt that closed it: a higher number than the killed one proves it. A local
 * activity runs inside a workflow task: the task the kill interrupted times out on the server
 * (WorkflowTaskTimedOut) and the next one runs the step again.
 */
async function historyEvidence(
  client: Client,
  hold: Extract<HookMessage, { type: 'hold' }>,
): Promise<{ hit: boolean; text: string }> {
  if (!hold.workflowId || !hold.activityType) return { hit: false, text: 'no activity context' };
  const events: History = [];
  // The run the kill hit may have continued as new or been followed by another; all runs count.
  for await (const execution of client.workflow.list({
    query: `WorkflowId = "${hold.workflowId}"`,
  })) {
    const history = await client.workflow
      .getHandle(execution.workflowId, execution.runId)
      .fetchHistory();
    events.push(...(history.events ?? []));
  }
  if (hold.local) {
    const lost = events.filter(
      (e) => e.workflowTaskTimedOutEventAttributes || e.workflowTaskFailedEventAttributes,
    ).length;
    const markers = events.filter(
      (e) =>
        e.markerRecordedEventAttributes?.markerName === 'core_local_activity' &&
        localActivityType(e.markerRecordedEventAttributes) === hold.activityType,
    ).length;
    return {
      hit: lost > 0,
      text: `history: ${lost} workflow task(s) timed out, ${markers} ${hold.activityType} marker(s)`,
    };
  }
  const scheduled = new Set(
    events
      .filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === hold.activityType,
      )
      .map((e) => String(e.eventId)),
  );
  const attempts = events
    .filter((e) => scheduled.has(String(e.activityTaskStartedEventAttributes?.scheduledEventId)))
    .map((e) => e.activityTaskStartedEventAttributes?.attempt ?? 0);
  const best = Math.max(0, ...attempts);
  return {
    hit: best > (hold.attempt ?? Number.POSITIVE_INFINITY),
    text: `history: ${hold.activityType} closed by attempt ${best}`,
  };
}

function seconds(ms: number | undefined): string {
  return `${((ms ?? 0) / 1000).toFixed(1)} s`;
}
