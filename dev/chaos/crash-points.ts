import { execFile, execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time';
import { sql } from 'kysely';
import { temporal } from '@temporalio/proto';
import type { CrashPointName } from '../../src/activities/crash-points';
import { invoiceFile } from '../../src/activities/invoice-activities';
import {
  createDatabase,
  createOrdersRepository,
  createPartnerPausesRepository,
  createPaymentsRepository,
  createUnmatchedRepository,
  migrateToLatest,
  type PartnerPausesRepository,
} from '../../src/db';
import { wakeHeldWorkflows } from '../../src/operator/partner';
import { PartnerPausedSearchAttribute } from '../../src/shared/search-attributes';
import { signBody } from '../../src/http/signature';
import { PAYMENT_DISPUTED_EVENT, PAYMENT_REFUNDED_EVENT } from '../../src/http/providers/original';
import { PAYMENT_WEBHOOK_PATH } from '../../src/http/routes/payment-webhook';
import { disputeWorkflowId, refundWorkflowId } from '../../src/shared/payment-events';
import { thinEventWorkflowId, type ThinEventWorkflowInput } from '../../src/shared/thin-event';
import { confirmationMessageId } from '../../src/mail/order-confirmation';
import { closeFailure } from '../../src/operator/failed-workflows';
import { causeChain } from '../../src/operator/failures';
import {
  HEAVY_TASK_QUEUE,
  PAYMENT_SUCCEEDED_EVENT,
  PAYMENTS_TASK_QUEUE,
  paymentWorkflowId,
  shipmentIdempotencyKey,
} from '../../src/shared/constants';
import { orderWorkflowId } from '../../src/shared/order';
import { slaIncidentWorkflowId } from '../../src/shared/sla';
import { EXPORT_FILE, EXPORT_INDEX_FILE, exportWorkflowId } from '../../src/shared/export';
import { waitForTemporal } from './temporal-server';
import {
  HOLD_MS,
  MAIL_FROM,
  NAMESPACE,
  READY_TIMEOUT_MS,
  startStack,
  WEBHOOK_SECRET,
  type Database,
  type Fault,
  type Hold,
  type Pass,
  type Stack,
} from './crash-stack';
import { localActivityType } from './evidence';
import { allMigrationsLine, migrateSpec, schemaOf } from './migration-points';
import {
  AMOUNT,
  armName,
  scenarioSpec,
  undeclaredArms,
  type OrderExpectation,
  type PointRun,
  type Scenario,
} from './crash-scenarios';
import type { OperatorHookMessage } from './operator-hook';
import type { HookMessage } from './worker-hook';

/**
 * The enumerated crash run: for every crash point declared in src/activities/crash-points.ts,
 * on each side of it, one scenario that reaches it runs against the real processes (Temporal CLI
 * dev server, src/worker.ts, src/heavy-worker.ts, src/http/server.ts, with the chaos preload), the
 * point is armed, the worker that reaches it freezes there and is SIGKILLed, a new one takes over,
 * and once every workflow has closed the outcome is counted and judged. The servers are started
 * once per database; per point only the killed worker restarts.
 */

export type { Database, Fault } from './crash-stack';

export interface Counts {
  payments: number;
  shipments: number;
  /** Copies of the confirmation (same Message-ID) and mails with any other Message-ID. */
  mails: number;
  otherMails: number;
  ledger: number;
  alerts: number;
  /** Failed runs of the order's workflow that visibility lists. */
  failedRuns: number;
  /** Something seen that the counts do not judge (shown with the evidence). */
  note?: string;
  /** Scenario-specific: invoice file, refund flag, export rows, snapshots. */
  extra: string;
  /** When each copy of the confirmation, and each alert, arrived (ms). */
  mailTimes: number[];
  alertTimes: number[];
  /** Each alert's Idempotency-Key, in the order of alertTimes. */
  alertKeys: Array<string | undefined>;
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
// Long enough for the slowest retry after a kill: a mail's 15 s start-to-close timeout, then its
// backoff, then the rest of the order.
const SETTLE_TIMEOUT_MS = 90_000;
const HIT_TIMEOUT_MS = 60_000;
// An operator command answers in seconds; this only bounds one that hangs.
const OPERATOR_TIMEOUT_MS = 60_000;

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
            if (!(await reachesOn(stack, run))) {
              log(`${database} ${armName(run)}: not a point on ${database}, skipped`);
              continue;
            }
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
  let scenario: PreparedScenario | undefined;
  try {
    sequence += 1;
    const tag = `${Date.now().toString(36)}_${sequence}`;
    if (scenarioSpec(run.scenario).kind === 'operator') {
      await runOperatorPoint(stack, run, tag, outcome);
      return outcome;
    }
    if (scenarioSpec(run.scenario).kind === 'migration') {
      await runMigrationPoint(stack, run, tag, outcome);
      return outcome;
    }
    scenario = await prepare(stack, run.scenario, tag);
    const passesBefore = stack.passes.length;
    writeFileSync(armFile, '');
    const root = await scenario.trigger();
    const hold = await waitForHold(stack, holdsBefore);
    rmSync(armFile, { force: true });
    if (!hold) outcome.problems.push(`the point was not reached within ${HIT_TIMEOUT_MS / 1000} s`);
    else if (stack.fault === 'worker-kill' && !hold.killed)
      outcome.problems.push(`${hold.worker} reported the hold but was not killed`);
    const injected =
      hold && stack.fault !== 'worker-kill' ? await injectFault(stack, hold) : undefined;
    await scenario.afterHit?.();
    await settle(stack.client, await (scenario.root?.() ?? root));
    outcome.counts = await scenario.count();
    const outage = injected?.outage;
    outcome.problems.push(...scenario.judge(outcome.counts, run, outage, hold));
    const passed = stack.passes.slice(passesBefore).map((p) => p.point);
    const undeclared = undeclaredArms(run.scenario, passed);
    if (undeclared.length > 0) {
      outcome.problems.push(
        `passed ${undeclared.join(', ')}, which ${run.scenario} does not declare it reaches`,
      );
    }
    if (injected) {
      outcome.hit = injected.hit;
      outcome.evidence = injected.text;
      if (!injected.hit) outcome.problems.push('the fault did not overlap the hold');
    } else if (hold) {
      const evidence = await historyEvidence(stack.client, hold.message, stack.passes);
      outcome.hit = hold.killed && evidence.hit;
      outcome.evidence = `${hold.worker} killed at ${hold.message.activityType ?? '?'} attempt ${hold.message.attempt ?? '?'}; ${evidence.text}`;
      if (!evidence.hit) outcome.problems.push('the history does not show the killed attempt lost');
    } else {
      outcome.evidence = 'not reached';
    }
    if (outcome.counts.note) outcome.evidence += `; ${outcome.counts.note}`;
    outcome.documentedDuplicate =
      explainedDuplicate(outcome.counts.mailTimes, mayDuplicateMail(run, stack.fault), outage) ||
      explainedDuplicate(outcome.counts.alertTimes, mayDuplicateAlert(run, stack.fault), outage) ||
      killedInFlight(outcome.counts, hold);
  } catch (error) {
    outcome.problems.push(error instanceof Error ? error.message : String(error));
    log(
      `${armName(run)}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`,
    );
  } finally {
    rmSync(armFile, { force: true });
    scenario?.cleanup?.();
    outcome.verdict = outcome.problems.length === 0 ? 'PASS' : 'FAIL';
    outcome.durationMs = Date.now() - started;
  }
  return outcome;
}

// ---------------------------------------------------------------------------------------------
// An operator action, interrupted after one of its server calls

/**
 * An order fails (the warehouse answers 400), the operator's command is started with the point
 * armed (`call-<n>`), the CLI freezes after its n-th server call returned and is SIGKILLed there;
 * then the operator runs the command again, as one would after a lost terminal, every workflow
 * settles, and the order is counted against the scenario's expectations.
 */
async function runOperatorPoint(
  stack: Stack,
  run: PointRun,
  tag: string,
  outcome: PointOutcome,
): Promise<void> {
  const spec = scenarioSpec(run.scenario);
  if (spec.kind !== 'operator' || run.call === undefined) throw new Error(`${run.point}: no call`);
  // `retry all` and `flush` act on every failed workflow: this run's must be the only one.
  if (spec.action !== 'retry') await deleteEveryFailedRun(stack.client);
  const order = await createOrder(stack, tag);
  stack.warehouse.setMode({ kind: 'reject', status: 400 }, 1);
  await settle(stack.client, await deliver(stack, `evt_crash_${tag}_1`, order.id));
  await settleOrder(stack.client, order.id);
  stack.warehouse.setMode({ kind: 'ok' });
  // Both commands find the failure through visibility, which follows the close a moment later.
  await waitFor(`order ${order.id} listed as failed`, async () =>
    (await failedOrderRuns(stack.client, order.id)).length === 1 ? true : undefined,
  );
  const args = {
    retry: ['retry', orderWorkflowId(order.id)],
    'retry all': ['retry', 'all'],
    flush: ['flush', '--yes'],
  }[spec.action];
  const armFile = path.join(stack.armDir, armName(run));
  writeFileSync(armFile, '');
  const interrupted = await operatorCommand(stack, `ops-${tag}-1`, args);
  rmSync(armFile, { force: true });
  const again = await operatorCommand(stack, `ops-${tag}-2`, args);
  await settleOrder(stack.client, order.id);
  outcome.counts = await countOrder(stack, order.id);
  outcome.problems.push(...judgeOrder(stack, spec.expected, outcome.counts, run, undefined));

  const held = interrupted.held;
  outcome.hit = held?.n === run.call && interrupted.signal === 'SIGKILL';
  if (!held) outcome.problems.push(`the CLI made no call ${run.call}`);
  else if (!outcome.hit) outcome.problems.push(`the CLI was not killed after call ${run.call}`);
  const made = (calls: OperatorCall[]) => calls.map((c) => c.method);
  const expectedCalls = spec.calls.slice(0, run.call);
  if (made(interrupted.calls).join() !== expectedCalls.join()) {
    outcome.problems.push(
      `calls ${made(interrupted.calls).join(', ')}, declared ${expectedCalls.join(', ')}`,
    );
  }
  // Killed after its first call, the command changed nothing: run again, it makes every call.
  if (run.call === 1 && !sameCalls(made(again.calls), spec.calls, spec.polls ?? [])) {
    outcome.problems.push(
      `run again: calls ${made(again.calls).join(', ')}, declared ${spec.calls.join(', ')}`,
    );
  }
  outcome.evidence =
    `CLI ${outcome.hit ? 'killed' : 'not killed'} after call ${held?.n ?? '?'} (${held?.method ?? '–'}); ` +
    `run again: exit ${again.code ?? again.signal}, ${again.calls.length} calls`;
}

// ---------------------------------------------------------------------------------------------
// A migration, interrupted between two statements

/**
 * `npm run migrate` on a database of its own, held at the point by the migrations' preload and
 * SIGKILLed there, then run again as a deploy's next start would: it must finish, and the schema
 * must be what a clean migration leaves (recorded migrations, tables and columns, indexes).
 */
async function runMigrationPoint(
  stack: Stack,
  run: PointRun,
  tag: string,
  outcome: PointOutcome,
): Promise<void> {
  const fresh = await freshDatabase(stack, `migrate_${tag}`);
  stack.referenceSchema ??= await referenceSchema(stack);
  let held: string | undefined;
  const interrupted = await oneShot(stack, `migrate-${tag}-1`, fresh, run.point, (message) => {
    held = message;
    return true;
  });
  const again = await oneShot(stack, `migrate-${tag}-2`, fresh, undefined, () => false);
  const schema = await schemaOf(fresh);
  outcome.hit = held === run.point && interrupted.signal === 'SIGKILL';
  if (held !== run.point) outcome.problems.push(`the migration never reached ${run.point}`);
  else if (!outcome.hit) outcome.problems.push('the migrating process was not killed there');
  if (again.code !== 0) outcome.problems.push(`run again: exit ${again.code ?? again.signal}`);
  if (schema !== stack.referenceSchema) {
    const line = schema.split('\n').find((l, i) => l !== stack.referenceSchema!.split('\n')[i]);
    outcome.problems.push(`schema differs from a clean migration's: ${line ?? schema}`);
  }
  if (!schema.startsWith(allMigrationsLine()))
    outcome.problems.push('not every migration recorded');
  outcome.counts = {
    ...noOrderCounts(),
    extra: schema === stack.referenceSchema ? 'schema as clean' : 'schema differs',
  };
  outcome.evidence = `migrate ${outcome.hit ? 'killed' : 'not killed'} at ${held ?? '–'}; run again: exit ${again.code ?? again.signal}`;
}

/** A database nobody has migrated: a new SQLite file, or a new database in the cluster. */
async function freshDatabase(stack: Stack, name: string): Promise<string> {
  if (!stack.postgres) return `sqlite:${path.join(stack.dataDir, `${name}.db`)}`;
  await sql.raw(`create database "${name}"`).execute(stack.db.db);
  const url = new URL(stack.postgres.url);
  url.pathname = `/${name}`;
  return url.toString();
}

async function referenceSchema(stack: Stack): Promise<string> {
  const url = await freshDatabase(stack, 'migrate_reference');
  const handle = createDatabase(url, { poolMax: 1 });
  const points = new Set<string>();
  try {
    await migrateToLatest(handle.db, { atPoint: (point) => void points.add(point) });
  } finally {
    await handle.close();
  }
  stack.migrationPoints = points;
  return schemaOf(url);
}

/**
 * Whether the run's point exists on the stack's database: a migration row is a point of
 * SQLite's, and a migration that rebuilds a table there (0011) has fewer statements on
 * PostgreSQL. Every other row exists on both.
 */
async function reachesOn(stack: Stack, run: PointRun): Promise<boolean> {
  if (scenarioSpec(run.scenario).kind !== 'migration') return true;
  stack.referenceSchema ??= await referenceSchema(stack);
  return stack.migrationPoints!.has(run.point);
}

/** `npm run migrate` once, to its end; `onHold` says whether to SIGKILL it at a hold. */
async function oneShot(
  stack: Stack,
  name: string,
  databaseUrl: string,
  holdAt: string | undefined,
  onHold: (point: string) => boolean,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const migrate = stack.oneShot(
    migrateSpec({
      name,
      databaseUrl,
      holdAt,
      logDir: stack.logDir,
      onControlLine: (line, process) => {
        let message: { type?: string; point?: string };
        try {
          message = JSON.parse(line) as typeof message;
        } catch {
          return;
        }
        if (message.type === 'hold' && message.point && onHold(message.point)) {
          process.kill('SIGKILL');
        }
      },
    }),
  );
  migrate.start();
  const exited = migrate.exited();
  const timer = setTimeout(() => migrate.kill('SIGKILL'), OPERATOR_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
  const exit = migrate.exits.at(-1);
  return { code: exit?.code ?? null, signal: exit?.signal ?? null };
}

interface OperatorCall {
  n: number;
  method: string;
}

interface OperatorCommandResult {
  calls: OperatorCall[];
  held: OperatorCall | undefined;
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Runs one operator command to its end, SIGKILLing it when it freezes at the armed call. */
async function operatorCommand(
  stack: Stack,
  name: string,
  args: string[],
): Promise<OperatorCommandResult> {
  const result: OperatorCommandResult = { calls: [], held: undefined, code: null, signal: null };
  const cli = stack.operatorCli(name, args, (line, process) => {
    let message: OperatorHookMessage;
    try {
      message = JSON.parse(line) as OperatorHookMessage;
    } catch {
      return;
    }
    if (message.type === 'call') result.calls.push({ n: message.n, method: message.method });
    if (message.type === 'hold') {
      result.held = { n: message.n, method: message.method };
      process.kill('SIGKILL');
    }
  });
  cli.start();
  const exited = cli.exited();
  const timer = setTimeout(() => cli.kill('SIGKILL'), OPERATOR_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
  const exit = cli.exits.at(-1);
  result.code = exit?.code ?? null;
  result.signal = exit?.signal ?? null;
  return result;
}

function sameCalls(made: readonly string[], declared: readonly string[], polls: readonly string[]) {
  const first = made.slice(0, declared.length);
  return (
    first.join() === declared.join() && made.slice(declared.length).every((m) => polls.includes(m))
  );
}

/**
 * Deletes every failed run in the namespace (earlier rows', judged already, and the failed runs a
 * retry leaves beside its new run), and waits until visibility lists none: `retry all` and `flush`
 * then see this row's failure alone, and make the calls the scenario declares.
 */
async function deleteEveryFailedRun(client: Client): Promise<void> {
  for await (const execution of client.workflow.list({ query: 'ExecutionStatus = "Failed"' })) {
    try {
      await client.workflowService.deleteWorkflowExecution({
        namespace: NAMESPACE,
        workflowExecution: { workflowId: execution.workflowId, runId: execution.runId },
      });
    } catch (error) {
      // Deleted already (the listing lags the deletion).
      if (!(error instanceof Error && /not found/i.test(error.message))) throw error;
    }
  }
  await waitFor('no failed run listed', async () =>
    (await client.workflow.count('ExecutionStatus = "Failed"')).count === 0 ? true : undefined,
  );
}

/** The order's latest run closed (or deleted) and nothing runs in the namespace. */
async function settleOrder(client: Client, orderId: number): Promise<void> {
  await waitFor(`order ${orderId} settled`, async () => {
    try {
      const latest = await client.workflow.getHandle(orderWorkflowId(orderId)).describe();
      if (latest.status.name === 'RUNNING') return undefined;
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) return undefined;
    }
    return (await client.workflow.count('ExecutionStatus = "Running"')).count === 0
      ? true
      : undefined;
  });
}

async function waitFor<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch {
      // The server answers slowly: ask again.
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${SETTLE_TIMEOUT_MS / 1000} s`);
    await delay(200);
  }
}

/**
 * The one window where a crash sends the confirmation twice (docs/exactly-once.md): the SMTP
 * server said 250 and `confirmation_sent_at` is not stamped yet. Both sides name that moment. A
 * database outage that starts before the send can last past it, so the stamp fails after the 250
 * and the retry sends again: the same window, held open by the outage.
 */
function mayDuplicateMail(run: PointRun, fault: Fault): boolean {
  return mayDuplicate(run, fault, 'sendOrderConfirmation.smtp', 'sendOrderConfirmation.stamp');
}

/** The same window for an alert: the webhook said 2xx, the delivery is not stamped yet. */
function mayDuplicateAlert(run: PointRun, fault: Fault): boolean {
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

/**
 * Two posts of one alert (the same Idempotency-Key), the first before the worker froze at the
 * point and the second after its kill: the kill caught an alert in flight beside the point, in
 * the same process (an order's alert child runs beside its order run), between its post and its
 * stamp. That is the window of deliverAlert.post@after reached from another point; the key lets
 * the sink drop the second (docs/exactly-once.md).
 */
function killedInFlight(counts: Counts, hold: Hold | undefined): boolean {
  if (!hold?.killed || counts.alertTimes.length !== 2) return false;
  const [firstKey, secondKey] = counts.alertKeys;
  const [first, second] = counts.alertTimes as [number, number];
  return (
    firstKey !== undefined &&
    firstKey === secondKey &&
    Math.min(first, second) <= hold.at &&
    Math.max(first, second) >= hold.at
  );
}

function mayDuplicate(
  run: PointRun,
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
  judge: (
    counts: Counts,
    run: PointRun,
    outage: Outage | undefined,
    hold: Hold | undefined,
  ) => string[];
  /** Puts back what the scenario changed in the partners (the warehouse's mode). */
  cleanup?: () => void;
  /** Runs once the point was passed (and the fault is over), before the run must settle. */
  afterHit?: () => Promise<void>;
  /** The workflow to settle on when afterHit started a later one than the trigger's. */
  root?: () => Promise<WorkflowHandle>;
}

async function prepare(stack: Stack, scenario: Scenario, tag: string): Promise<PreparedScenario> {
  const spec = scenarioSpec(scenario);
  if (spec.kind === 'export') return prepareExport(stack, tag);
  if (spec.kind === 'stock') return prepareStock(stack, tag);
  if (spec.kind === 'sla') return prepareSla(stack, tag);
  if (spec.kind === 'unknown-order') return prepareUnknownOrder(stack, tag);
  if (spec.kind !== 'order') throw new Error(`${scenario} is an operator scenario`);
  const order = await createOrder(stack, tag);
  const event = (n: number) => `evt_crash_${tag}_${n}`;
  if (spec.paidBefore) {
    // The first payment fulfils the order before the point is armed; the second is the double.
    await settle(stack.client, await deliver(stack, event(1), order.id));
    await settleOrder(stack.client, order.id);
  }
  if (spec.shippedBefore && !(await stack.warehouse.ship(shipmentIdempotencyKey(order.id)))) {
    throw new Error(`order ${order.id}: the warehouse has no shipment to mark shipped`);
  }
  if (spec.warehouse === 'rejects') stack.warehouse.setMode({ kind: 'reject', status: 400 }, 1);
  if (spec.warehouse === 'down') stack.warehouse.setMode({ kind: 'unavailable', status: 503 });
  const pauses = createPartnerPausesRepository(stack.db.db);
  if (spec.warehouse === 'paused') await pauses.pause('warehouse', 'crash-points', tag);
  let deadlineShortened: Promise<void> | undefined;
  let resumed: Promise<void> | undefined;
  return {
    trigger: async () => {
      if (spec.thin) return startThinPayment(stack, event(1), order.id);
      if (spec.refund === 'after-shipment')
        return deliverRefund(stack, event(2), event(1), order.id);
      if (spec.dispute === 'after-shipment') {
        await (await deliverDispute(stack, event(2), event(1), order.id, 'opened')).result();
        await settleOrder(stack.client, order.id);
        return deliverDispute(stack, event(3), event(1), order.id, 'lost');
      }
      if (spec.refund === 'before-payment') {
        // Applied by the order's run before the payment comes (then not yet a full refund of a
        // paid order); the payment's fulfilment then finds the order refunded in full.
        await (await deliverRefund(stack, event(2), event(1), order.id)).result();
        await settleOrder(stack.client, order.id);
      }
      const root = await deliver(stack, event(spec.paidBefore ? 2 : 1), order.id);
      if (spec.warehouse === 'down') {
        deadlineShortened = shortenWarehouseDeadline(stack, order.id);
        // Awaited in count(); handled now, so a failure is not an unhandled rejection meanwhile.
        deadlineShortened.catch(() => undefined);
      }
      if (spec.warehouse === 'paused') {
        resumed = resumeOnceHeld(stack, pauses, order.id);
        resumed.catch(() => undefined);
      }
      return root;
    },
    count: async () => {
      await deadlineShortened;
      await resumed;
      // Visibility's count of running workflows may lag a moment; the order's own run does not.
      await settleOrder(stack.client, order.id);
      return countOrder(stack, order.id);
    },
    judge: (counts, run, outage, hold) =>
      judgeOrder(stack, spec.expected, counts, run, outage, hold),
    cleanup: () => {
      stack.warehouse.setMode({ kind: 'ok' });
      // Never leave the warehouse paused for the next scenario (awaited by nobody: best effort).
      if (spec.warehouse === 'paused') pauses.resume('warehouse').catch(() => undefined);
    },
  };
}

/**
 * The operator's part of the `partner-pause` scenario: once the order's run holds its warehouse
 * call (PartnerPaused set, whatever crash the worker went through), resume at 1 call per second
 * through the same code as `ops partner resume`, with the table first and the wake-up signals.
 */
async function resumeOnceHeld(
  stack: Stack,
  pauses: PartnerPausesRepository,
  orderId: number,
): Promise<void> {
  await waitFor(`order ${orderId} held by the pause`, async () => {
    try {
      const run = await stack.client.workflow.getHandle(orderWorkflowId(orderId)).describe();
      return run.typedSearchAttributes.get(PartnerPausedSearchAttribute) ? true : undefined;
    } catch {
      return undefined;
    }
  });
  await pauses.resume('warehouse', 1);
  await wakeHeldWorkflows(stack.client, 'warehouse');
}

async function createOrder(stack: Stack, tag: string) {
  const { order } = await createOrdersRepository(stack.db.db).createWithIdempotencyKey({
    userId: 1,
    customerEmail: `buyer-${tag}@example.com`,
    totalAmount: AMOUNT,
    idempotencyKey: `crash-${tag}`,
  });
  return order;
}

/** The counts a scenario expects, and the checks of the order's row and its failed run. */
function judgeOrder(
  stack: Stack,
  expected: OrderExpectation,
  counts: Counts,
  run: PointRun,
  outage: Outage | undefined,
  hold?: Hold,
): string[] {
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
  const alerts =
    explainedDuplicate(counts.alertTimes, alertWindow, outage) || killedInFlight(counts, hold)
      ? 1
      : counts.alerts;
  want('alerts', expected.alerts, alerts);
  if (alerts !== expected.alerts) problems.push(`alert keys ${counts.alertKeys.join(', ')}`);
  want('failedRuns', expected.failedRuns, counts.failedRuns);
  const extra = orderExtra({
    ...expected,
    warehouseShipment:
      expected.warehouseShipment ?? (expected.shipments > 0 ? 'requested' : 'none'),
  });
  if (counts.extra !== extra) problems.push(`${counts.extra}, expected ${extra}`);
  return problems;
}

/** The order's row and its failed run, as `countOrder` words them. */
function orderExtra(o: {
  invoice: boolean;
  refundReview: boolean;
  shipmentStatus: string;
  refunded?: number | undefined;
  returnReview?: boolean | undefined;
  warehouseShipment: string;
  disputeStatus?: string | undefined;
  gaveUp?: string | undefined;
}): string {
  return [
    o.invoice ? 'invoice' : 'no invoice',
    o.refundReview ? 'review' : 'no review',
    o.shipmentStatus,
    `refunded ${o.refunded ?? 0}`,
    o.returnReview ? 'return review' : 'no return review',
    `warehouse: ${o.warehouseShipment}`,
    ...(o.disputeStatus ? [`dispute ${o.disputeStatus}`] : []),
    ...(o.gaveUp ? [`gave up: ${o.gaveUp}`] : []),
  ].join(', ');
}

// The deadline the warehouse-down scenario gives the notification instead of its 30 minutes: the
// first attempt fails at once, the second after the 10 s backoff, and the third would come 30 s
// later, past the deadline, so the server gives up on the deadline (retry state TIMEOUT).
const WAREHOUSE_DOWN_DEADLINE_SECONDS = 20;

/**
 * "Down until the deadline" in seconds, not the policy's 30 minutes: once the notification is
 * pending, its schedule-to-close timeout is shortened with the server's UpdateActivityOptions
 * (what `temporal activity update-options` sends). The workflow code, its bundle and its retry
 * policy stay as they ship; the server applies the deadline, as it would the real one.
 */
async function shortenWarehouseDeadline(stack: Stack, orderId: number): Promise<void> {
  const order = stack.client.workflow.getHandle(orderWorkflowId(orderId));
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  for (;;) {
    let description;
    try {
      description = await order.describe();
    } catch {
      // The order's workflow is not started yet, or the server answers slowly: ask again.
    }
    const pending = description?.raw.pendingActivities ?? [];
    if (pending.some((a) => a.activityType?.name === 'notifyWarehouse')) break;
    if (description && description.status.name !== 'RUNNING') {
      throw new Error('the order workflow closed before its warehouse notification was pending');
    }
    if (Date.now() > deadline) throw new Error('the warehouse notification never became pending');
    await delay(100);
  }
  await stack.client.workflowService.updateActivityOptions({
    namespace: NAMESPACE,
    execution: { workflowId: order.workflowId },
    identity: 'crash-points',
    type: 'notifyWarehouse',
    activityOptions: {
      scheduleToCloseTimeout: msToTs(`${WAREHOUSE_DOWN_DEADLINE_SECONDS} seconds`),
    },
    updateMask: { paths: ['schedule_to_close_timeout'] },
  });
}

async function deliver(stack: Stack, eventId: string, orderId: number): Promise<WorkflowHandle> {
  const body = { id: eventId, event: PAYMENT_SUCCEEDED_EVENT, order_id: orderId, amount: AMOUNT };
  await post(stack, eventId, body);
  return stack.client.workflow.getHandle(paymentWorkflowId(eventId));
}

/**
 * A Stripe thin `v1.payment_intent.succeeded` for the order, started as the HTTP edge starts one
 * it verified (the stack's HTTP process speaks the contract's scheme, not Stripe's): its
 * PaymentIntent is what the workers then fetch from the stack's API double.
 */
async function startThinPayment(
  stack: Stack,
  eventId: string,
  orderId: number,
): Promise<WorkflowHandle> {
  const intent = `pi_${eventId}`;
  stack.stripeApi.answers = [
    {
      status: 200,
      body: {
        id: intent,
        object: 'payment_intent',
        amount: AMOUNT,
        amount_received: AMOUNT,
        currency: 'jpy',
        status: 'succeeded',
        livemode: false,
        metadata: { order_id: String(orderId) },
      },
    },
  ];
  const input: ThinEventWorkflowInput = {
    eventId: `stripe~${eventId}`,
    notification: {
      id: eventId,
      object: 'v2.core.event',
      type: 'v1.payment_intent.succeeded',
      livemode: false,
      related_object: { id: intent, type: 'payment_intent', url: `/v1/payment_intents/${intent}` },
    },
  };
  return stack.client.workflow.start('thinEventWorkflow', {
    taskQueue: PAYMENTS_TASK_QUEUE,
    workflowId: thinEventWorkflowId(input.eventId),
    args: [input],
  });
}

/** A refund of the whole payment `paymentId` (the contract's payment.refunded). */
async function deliverRefund(
  stack: Stack,
  eventId: string,
  paymentId: string,
  orderId: number,
): Promise<WorkflowHandle> {
  const body = {
    id: eventId,
    event: PAYMENT_REFUNDED_EVENT,
    order_id: orderId,
    payment_id: paymentId,
    amount: AMOUNT,
    refund_id: `re_${eventId}`,
  };
  await post(stack, eventId, body);
  return stack.client.workflow.getHandle(refundWorkflowId(eventId));
}

/** A dispute of the payment `paymentId` (the contract's payment.disputed). */
async function deliverDispute(
  stack: Stack,
  eventId: string,
  paymentId: string,
  orderId: number,
  status: 'opened' | 'lost',
): Promise<WorkflowHandle> {
  const body = {
    id: eventId,
    event: PAYMENT_DISPUTED_EVENT,
    order_id: orderId,
    payment_id: paymentId,
    amount: AMOUNT,
    dispute_id: `dp_${paymentId}`,
    status,
    evidence_due_by: '2030-01-31T23:59:59Z',
  };
  await post(stack, eventId, body);
  return stack.client.workflow.getHandle(disputeWorkflowId(eventId));
}

async function post(stack: Stack, eventId: string, body: object): Promise<void> {
  const raw = JSON.stringify(body);
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
      if (response.status === 200) return;
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
  const failed = await failedOrderRuns(stack.client, orderId);
  const gaveUp = failed[0] && (await gaveUpReason(stack.client, failed[0]));
  const messageId = confirmationMessageId(orderId, MAIL_FROM);
  const toOrder = stack.smtp.messages.filter((m) =>
    m.envelopeTo.includes(order?.customerEmail ?? ''),
  );
  const invoice = existsSync(invoiceFile(path.join(stack.dataDir, 'invoices'), orderId));
  const row = await db
    .selectFrom('orders')
    .where('id', '=', orderId)
    .select([
      'refund_review_requested_at',
      'shipment_status',
      'refunded_amount',
      'return_review_requested_at',
      'dispute_status',
    ])
    .executeTakeFirst();
  const shipments = [...stack.warehouse.shipments.values()].filter((s) => s.orderId === orderId);
  const shipment = shipments[0];
  return {
    payments: await count('payments'),
    shipments: shipments.length,
    mails: toOrder.filter((m) => m.messageId === messageId).length,
    mailTimes: toOrder
      .filter((m) => m.messageId === messageId)
      .map((m) => Date.parse(m.receivedAt)),
    alertTimes: stack.alerts.filter((a) => a.orderId === orderId).map((a) => a.at),
    alertKeys: stack.alerts.filter((a) => a.orderId === orderId).map((a) => a.idempotencyKey),
    otherMails: toOrder.filter((m) => m.messageId !== messageId).length,
    ledger: await count('loyalty_ledger'),
    alerts: stack.alerts.filter((a) => a.orderId === orderId).length,
    failedRuns: failed.length,
    extra: orderExtra({
      invoice,
      refundReview: Boolean(row?.refund_review_requested_at),
      shipmentStatus: row?.shipment_status ?? 'none',
      refunded: Number(row?.refunded_amount ?? 0),
      returnReview: Boolean(row?.return_review_requested_at),
      warehouseShipment: shipment?.status ?? 'none',
      disputeStatus: row?.dispute_status ?? undefined,
      gaveUp: gaveUp?.reason,
    }),
    ...(gaveUp && gaveUp.label !== gaveUp.reason
      ? { note: `the workflow labels the give-up ${gaveUp.label ?? 'nothing'}` }
      : {}),
  };
}

interface Execution {
  workflowId: string;
  runId: string;
}

/** The failed runs of an order's workflow that visibility lists (a reset keeps the old one). */
async function failedOrderRuns(client: Client, orderId: number): Promise<Execution[]> {
  const runs: Execution[] = [];
  const query = `WorkflowId = "${orderWorkflowId(orderId)}" AND ExecutionStatus = "Failed"`;
  for await (const execution of client.workflow.list({ query })) {
    runs.push({ workflowId: execution.workflowId, runId: execution.runId });
  }
  return runs;
}

/**
 * Why the server stopped retrying the warehouse, from the failed run's failure chain: a deadline
 * (the retry would pass it, or it passed between attempts), the attempts used up, or a failure
 * that is not retried. Read from the server's failure, not from the workflow's own label.
 */
async function gaveUpReason(client: Client, run: Execution): Promise<GaveUp> {
  const failure = await closeFailure(client, run.workflowId, run.runId);
  const chain = causeChain(failure);
  const activity = chain.find((f) => f.activityFailureInfo);
  const retryState = activity?.activityFailureInfo?.retryState;
  const timeout = chain.find((f) => f.timeoutFailureInfo)?.timeoutFailureInfo?.timeoutType;
  const { RetryState, TimeoutType } = temporal.api.enums.v1;
  const reason =
    retryState === RetryState.RETRY_STATE_TIMEOUT ||
    timeout === TimeoutType.TIMEOUT_TYPE_SCHEDULE_TO_CLOSE
      ? 'deadline'
      : retryState === RetryState.RETRY_STATE_MAXIMUM_ATTEMPTS_REACHED
        ? 'max_attempts'
        : retryState === RetryState.RETRY_STATE_NON_RETRYABLE_FAILURE
          ? 'non_retryable'
          : 'unknown';
  const payload = failure?.applicationFailureInfo?.details?.payloads?.[0];
  const details = payload?.data
    ? (JSON.parse(Buffer.from(payload.data).toString('utf8')) as { reason?: string })
    : {};
  return { reason, label: details.reason };
}

interface GaveUp {
  reason: string;
  /** What the workflow put in its failure's details (FulfilmentFailedDetails.reason). */
  label: string | undefined;
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

/**
 * An order paid in 2020 and never handed over: the first SLA check (the trigger) opens the
 * FulfilmentSlaBreached incident, then the order is handed over and a second check resolves it,
 * so the incident ends and the run settles. Whatever the crash, the sink got one "opened" and one
 * "resolved" post (two copies of one only in the alert's documented window).
 */
async function prepareSla(stack: Stack, tag: string): Promise<PreparedScenario> {
  const order = await createOrder(stack, tag);
  await stack.db.db
    .updateTable('orders')
    .set({ status: 'paid', updated_at: '2020-01-01T00:00:00.000Z' })
    .where('id', '=', order.id)
    .execute();
  const alertsBefore = stack.alerts.length;
  const check = (n: number) =>
    stack.client.workflow.start('slaCheckWorkflow', {
      taskQueue: PAYMENTS_TASK_QUEUE,
      workflowId: `crash-sla-${tag}-${n}`,
    });
  let first: WorkflowHandle | undefined;
  let second: WorkflowHandle | undefined;
  return {
    trigger: async () => (first = await check(1)),
    afterHit: async () => {
      await first?.result();
      await createOrdersRepository(stack.db.db).setShipmentStatus(order.id, 'requested');
      second = await check(2);
      await second.result();
      // The incident ends with its resolved post (which it waits for).
      await stack.client.workflow
        .getHandle(slaIncidentWorkflowId('FulfilmentSlaBreached'))
        .result();
    },
    root: async () => second ?? first!,
    count: async () => {
      const posts = stack.alerts
        .slice(alertsBefore)
        .filter((a) =>
          a.idempotencyKey?.startsWith(`${slaIncidentWorkflowId('FulfilmentSlaBreached')}-`),
        );
      const copies = (kind: string) => posts.filter((a) => a.kind === kind).length;
      const keys = new Set(posts.map((a) => a.idempotencyKey)).size;
      return {
        ...noOrderCounts(),
        alerts: posts.length,
        extra: `opened x${copies('sla_breached')}, resolved x${copies('sla_resolved')}, keys ${keys}`,
      };
    },
    judge: (counts, run) => {
      const once = 'opened x1, resolved x1, keys 2';
      // A crash between the sink's 2xx and the stamp repeats that one post (docs/exactly-once.md).
      const again = ['opened x2, resolved x1, keys 2', 'opened x1, resolved x2, keys 2'];
      if (counts.extra === once) return [];
      if (mayDuplicateAlert(run, stack.fault) && again.includes(counts.extra)) return [];
      return [`${counts.extra}, expected ${once}`];
    },
  };
}

/**
 * A payment for an order no run creates: the step that finds no order keeps the event in the
 * unmatched inbox, in the transaction the crash interrupts. Whatever the crash, the inbox holds
 * one entry counted once (the retry is the same run: its own entry, not a redelivery), no
 * payment row exists, and the run completed telling `created` (it, or its retry, kept it).
 */
async function prepareUnknownOrder(stack: Stack, tag: string): Promise<PreparedScenario> {
  // Far above any ID the stack's orders take, and a fresh one per run.
  const orderId = UNKNOWN_ORDER_ID_BASE + sequence;
  const eventId = `evt_crash_${tag}_unknown`;
  return {
    trigger: () => deliver(stack, eventId, orderId),
    count: async () => {
      const entry = await createUnmatchedRepository(stack.db.db).findByEventId(eventId);
      const payments = await createPaymentsRepository(stack.db.db).countByEventId(eventId);
      const handle = stack.client.workflow.getHandle(paymentWorkflowId(eventId));
      const status = (await handle.describe()).status.name;
      const result = status === 'COMPLETED' ? await handle.result() : undefined;
      const told = (result as { kind?: string; created?: boolean } | undefined) ?? {};
      return {
        ...noOrderCounts(),
        payments,
        extra: unknownOrderExtra({
          entry: entry ? `${entry.reason} x${entry.deliveryCount}` : 'none',
          status,
          result: told.kind ? `${told.kind}${told.created ? ' created' : ''}` : 'none',
        }),
      };
    },
    judge: (counts) => {
      const want = unknownOrderExtra({
        entry: 'unknown_order x1',
        status: 'COMPLETED',
        result: 'unmatched created',
      });
      return [
        ...(counts.payments === 0 ? [] : [`payments ${counts.payments}, expected 0`]),
        ...(counts.extra === want ? [] : [`${counts.extra}, expected ${want}`]),
      ];
    },
  };
}

const UNKNOWN_ORDER_ID_BASE = 1_900_000_000;

function unknownOrderExtra(o: { entry: string; status: string; result: string }): string {
  return `inbox ${o.entry}, run ${o.status}, result ${o.result}`;
}

function noOrderCounts(): Counts {
  return {
    payments: 0,
    shipments: 0,
    mails: 0,
    otherMails: 0,
    ledger: 0,
    alerts: 0,
    failedRuns: 0,
    extra: '',
    mailTimes: [],
    alertTimes: [],
    alertKeys: [],
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
  passes: readonly Pass[],
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
  const timedOutIdle = events.some(
    (e) =>
      scheduled.has(String(e.activityTaskTimedOutEventAttributes?.scheduledEventId)) &&
      Number(e.activityTaskTimedOutEventAttributes?.startedEventId ?? 0) === 0,
  );
  if (attempts.length === 0 && timedOutIdle) {
    // Its deadline came between two attempts: no attempt closed it, so the history names none.
    // The hook saw which attempts ran after the kill.
    const later = passes
      .filter((p) => p.workflowId === hold.workflowId && p.activityType === hold.activityType)
      .map((p) => p.attempt ?? 0)
      .filter((attempt) => attempt > (hold.attempt ?? Number.POSITIVE_INFINITY));
    return {
      hit: later.length > 0,
      text:
        `history: ${hold.activityType} timed out between attempts; ` +
        `attempt ${later.length > 0 ? Math.max(...later) : 'none'} ran after the kill`,
    };
  }
  return {
    hit: best > (hold.attempt ?? Number.POSITIVE_INFINITY),
    text: `history: ${hold.activityType} closed by attempt ${best}`,
  };
}

function seconds(ms: number | undefined): string {
  return `${((ms ?? 0) / 1000).toFixed(1)} s`;
}
