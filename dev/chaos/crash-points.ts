import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { Counts, PreparedScenario } from './crash-counts';
import { historyEvidence } from './crash-evidence';
import { injectFault } from './crash-faults';
import { prepareExport, prepareSla, prepareStock, prepareUnknownOrder } from './crash-job-rows';
import {
  explainedDuplicate,
  killedInFlight,
  mayDuplicateAlert,
  mayDuplicateMail,
} from './crash-judge';
import { reachesOn, runMigrationPoint } from './crash-migration-rows';
import { runOperatorPoint } from './crash-operator-rows';
import { prepareOrder } from './crash-order-rows';
import { scenarioSpec, type Scenario } from './crash-scenarios';
import { armName, undeclaredArms, type PointRun } from './crash-matrix';
import { HIT_TIMEOUT_MS, settle, waitForHold } from './crash-settle';
import { startStack, type Database, type Fault, type Stack } from './crash-stack';
import { seconds } from './seconds';

/**
 * The enumerated crash run: for every crash point declared in src/activities/crash-points.ts,
 * on each side of it, one scenario that reaches it runs against the real processes (Temporal CLI
 * dev server, src/worker.ts, src/heavy-worker.ts, src/http/server.ts, with the chaos preload), the
 * point is armed, the worker that reaches it freezes there and is SIGKILLed, a new one takes over,
 * and once every workflow has closed the outcome is counted and judged. The servers are started
 * once per database; per point only the killed worker restarts.
 */

export type { Database, Fault } from './crash-stack';

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
    scenario = await prepare(stack, run.scenario, tag, sequence);
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

/** The setup of a point row's scenario; `n` tells it from every other row of the run. */
async function prepare(
  stack: Stack,
  scenario: Scenario,
  tag: string,
  n: number,
): Promise<PreparedScenario> {
  const spec = scenarioSpec(scenario);
  if (spec.kind === 'export') return prepareExport(stack, tag);
  if (spec.kind === 'stock') return prepareStock(stack, tag, n);
  if (spec.kind === 'sla') return prepareSla(stack, tag);
  if (spec.kind === 'unknown-order') return prepareUnknownOrder(stack, tag, n);
  if (spec.kind !== 'order') throw new Error(`${scenario} is not a point scenario`);
  return prepareOrder(stack, spec, tag);
}
