import { readFileSync } from 'node:fs';

/**
 * `npm start` runs this process as `npm → sh -c → node`. npm passes Ctrl-C and SIGTERM on to
 * us, but when npm itself is killed outright (kill -9 on the PID a shell's `$!` gave, a CI job
 * runner giving up) nothing tells us, and the whole stack would go on serving its ports with
 * no launcher left. This watches the npm process that launched us and calls back when it is
 * gone. Linux only (it reads /proc); elsewhere, or when not run by npm, it watches nothing.
 */

interface ProcessId {
  pid: number;
  /** Start time from /proc/<pid>/stat: tells the process from a later one reusing its PID. */
  startTime: string;
}

/** How far up the tree to look: npm → sh → node is two steps. */
const MAX_DEPTH = 4;

/**
 * `/proc/<pid>/stat`'s parent PID and start time, or undefined when no such process runs (a
 * zombie, dead but not yet reaped, counts as gone).
 */
function readStat(pid: number): { ppid: number; startTime: string } | undefined {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  // The command name (field 2) may hold spaces and parentheses: split after its closing one.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state), so field N is fields[N - 3].
  if (fields[0] === 'Z' || fields[0] === 'X') return undefined;
  const ppid = Number(fields[1]);
  const startTime = fields[19];
  return Number.isInteger(ppid) && startTime !== undefined ? { ppid, startTime } : undefined;
}

function isNpm(pid: number): boolean {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    // npm renames its process "npm start"; unrenamed it is node running npm-cli.js.
    return argv.some((arg) => /(^|\/)npm(-cli\.js)?( |$)/.test(arg) || arg === 'npm');
  } catch {
    return false;
  }
}

/** The npm process this one was started by, if any. */
export function findNpmLauncher(
  env: NodeJS.ProcessEnv = process.env,
  startPid: number = process.ppid,
): ProcessId | undefined {
  if (process.platform !== 'linux' || !env.npm_lifecycle_event) return undefined;
  let pid = startPid;
  for (let depth = 0; depth < MAX_DEPTH && pid > 1; depth++) {
    const stat = readStat(pid);
    if (!stat) return undefined;
    if (isNpm(pid)) return { pid, startTime: stat.startTime };
    pid = stat.ppid;
  }
  return undefined;
}

/**
 * Calls `onGone` once when `launcher` no longer runs. Returns a function that stops watching.
 * The timer does not keep the process alive.
 */
export function watchLauncher(
  launcher: ProcessId,
  onGone: () => void,
  intervalMs = 1_000,
): () => void {
  const timer = setInterval(() => {
    if (readStat(launcher.pid)?.startTime === launcher.startTime) return;
    clearInterval(timer);
    onGone();
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
