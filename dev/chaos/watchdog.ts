import { spawn } from 'node:child_process';
import path from 'node:path';

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
