import { chmodSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { setMaxListeners } from 'node:events';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Arms } from './arms';
import { judge, waitForConvergence } from './chaos-judge';
import { emptyReport, type ChaosReport } from './chaos-report';
import { startStack } from './chaos-stack';
import type { ChaosOptions } from './options';
import { createRandom } from './random';
import { planOrders, storm } from './storm';
import { ProcessRegistry, type SupervisedProcess } from '../../harness/process/supervisor';
import { DATA_DIRS, stopWatchdog } from './watchdog';

/**
 * The chaos run: the real system (Temporal CLI dev server, PostgreSQL, worker processes from
 * src/worker.ts, the HTTP process from src/http/server.ts) under a stream of webhook deliveries,
 * while workers are SIGKILLed (at random and at chosen moments), the Temporal server is
 * SIGKILLed and restarted, and PostgreSQL is crash-stopped. Then every invariant is checked.
 * Everything it starts, it stops: on success, on error, and on abort (Ctrl-C).
 */

// Between two kills at the same kind of moment.
const ARM_PAUSE_MS = 3_000;

export interface RunChaosOptions {
  options: ChaosOptions;
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
