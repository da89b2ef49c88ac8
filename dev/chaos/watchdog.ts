import path from 'node:path';
import {
  killGroupsListedIn,
  quietCommand,
  shellQuote,
  startOrphanWatchdog,
} from '../../harness/process/watchdog';

// What a run writes besides its logs; deleted at the end unless --keep.
export const DATA_DIRS = ['pg', 'temporal', 'invoices', 'exports'];

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
  const watchdog = startOrphanWatchdog([
    killGroupsListedIn(path.join(runDir, 'pgids')),
    quietCommand(stopPostgres),
    `rm -rf ${DATA_DIRS.map((d) => shellQuote(path.join(runDir, d))).join(' ')}`,
  ]);
  return () => watchdog.stop();
}
