import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import type { Outage } from './crash-counts';
import {
  HOLD_MS,
  NAMESPACE,
  READY_TIMEOUT_MS,
  type Fault,
  type Hold,
  type Stack,
} from './crash-stack';
import { seconds } from './seconds';
import { waitForTemporal } from './temporal-server';

/**
 * The fault, while the worker is frozen at the point, lasting until after it carried on by itself
 * (the hook's hold time): so what the worker does next (report, or the next effect) meets it.
 */
export async function injectFault(
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
