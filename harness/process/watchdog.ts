import { execFileSync } from 'node:child_process';

/**
 * The one way the harness cleans up after a process that dies without running its own cleanup
 * (SIGKILL, OOM, a closed terminal, StrykerJS killing a test runner's process tree): a shell that
 * waits for this process to end and then runs `steps`, each a shell command.
 *
 * The shell is no descendant of this process (a shell that exits at once starts it) and leads a
 * session of its own (setsid), so a kill of this process's tree or process group does not take
 * it along. A clean stop calls stop(), which kills the watchdog's whole group before it acts:
 * it must never signal a PID that has since been reused.
 */
export interface Watchdog {
  stop(): void;
}

export function startOrphanWatchdog(steps: readonly string[]): Watchdog {
  const script = [`while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done`, ...steps].join(
    '; ',
  );
  const pid = Number(
    execFileSync(
      'sh',
      ['-c', `setsid sh -c ${shellQuote(script)} </dev/null >/dev/null 2>&1 & echo $!`],
      { encoding: 'utf8' },
    ).trim(),
  );
  let stopped = false;
  return {
    stop() {
      if (stopped) return;
      stopped = true;
      try {
        // The session leader's group: the shell and the `sleep` it waits in.
        process.kill(-pid, 'SIGKILL');
      } catch {
        // Gone already.
      }
    },
  };
}

/** One shell word, whatever it contains. */
export function shellQuote(word: string): string {
  return `'${word.replace(/'/g, `'\\''`)}'`;
}

/** A command line for a watchdog step, its output discarded. */
export function quietCommand(argv: readonly string[]): string {
  return `${argv.map(shellQuote).join(' ')} >/dev/null 2>&1`;
}

/** A watchdog step that SIGKILLs every process group listed (one a line) in `pidFile`. */
export function killGroupsListedIn(pidFile: string): string {
  return `for g in $(cat ${shellQuote(pidFile)} 2>/dev/null); do kill -9 -"$g" 2>/dev/null; done`;
}
