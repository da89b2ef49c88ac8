import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readSync, fstatSync, writeFileSync, writeSync } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';

/**
 * A small process manager for the chaos run, in the manner of systemd or Supervisor: every
 * process runs in a process group of its own (so a SIGKILL takes all of it and a terminal's
 * Ctrl-C never reaches it directly), is restarted after it exits, and writes its output to a log
 * file. It tells the exits it caused from the ones it did not: an unexpected exit is a finding.
 */

export interface ProcessSpec {
  /** Short name used in logs and the summary: `worker-1`, `http`, `temporal`. */
  name: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd: string;
  logFile: string;
  /** Restart after any exit (planned kills included), after `restartDelayMs`. */
  restart: boolean;
  restartDelayMs: number;
  /** Lines the process writes on file descriptor 3 (the chaos hook's channel). */
  onControlLine?: (line: string, process: SupervisedProcess) => void;
}

export interface ExitRecord {
  at: number;
  pid: number;
  code: number | null;
  signal: NodeJS.Signals | null;
  /** We killed it (a chaos action or the final cleanup). */
  planned: boolean;
  /** For an unexpected exit: the error line the process printed last, if any. */
  reason?: string;
}

/** Keeps the process groups that are alive, in memory and in a file the watchdog reads. */
export class ProcessRegistry {
  private readonly groups = new Set<number>();

  constructor(private readonly pidFile: string) {
    writeFileSync(pidFile, '');
  }

  add(pid: number): void {
    this.groups.add(pid);
    this.save();
  }

  remove(pid: number): void {
    this.groups.delete(pid);
    this.save();
  }

  /** SIGKILL to every group still alive; synchronous, so it also works in an 'exit' handler. */
  killAllSync(): void {
    for (const pid of this.groups) killGroup(pid, 'SIGKILL');
    this.groups.clear();
    this.save();
  }

  private save(): void {
    try {
      writeFileSync(this.pidFile, [...this.groups].join('\n'));
    } catch {
      // The run directory is gone (cleanup already ran): nothing left to tell the watchdog.
    }
  }
}

export class SupervisedProcess {
  readonly exits: ExitRecord[] = [];
  /** Every process ID this supervisor started, in order. */
  readonly pids: number[] = [];
  starts = 0;
  private child: ChildProcess | undefined;
  private expectingExit = false;
  private stopped = false;
  private restartTimer: NodeJS.Timeout | undefined;
  private nextRestartDelayMs: number | undefined;
  private exitWaiters: Array<() => void> = [];
  private readonly startListeners: Array<(pid: number) => void> = [];

  constructor(
    private readonly spec: ProcessSpec,
    private readonly registry: ProcessRegistry,
  ) {}

  get name(): string {
    return this.spec.name;
  }

  get pid(): number | undefined {
    return this.child?.pid;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  /** Running and not already on its way out (a kill sent, the exit not seen yet). */
  get alive(): boolean {
    return this.child !== undefined && !this.expectingExit;
  }

  /** Exits nobody asked for: crashes of the process under test. */
  get unexpectedExits(): ExitRecord[] {
    return this.exits.filter((e) => !e.planned);
  }

  onStart(listener: (pid: number) => void): void {
    this.startListeners.push(listener);
  }

  start(): void {
    if (this.stopped || this.child) return;
    const log = openSync(this.spec.logFile, 'a');
    writeSync(log, `\n=== ${new Date().toISOString()} starting ${this.spec.name}\n`);
    let child: ChildProcess;
    try {
      child = spawn(this.spec.command, this.spec.args, {
        cwd: this.spec.cwd,
        env: this.spec.env,
        // Its own process group: killing -pid takes the whole group, and a Ctrl-C at the
        // terminal reaches only the driver, which then stops everything in order.
        detached: true,
        stdio: ['ignore', log, log, this.spec.onControlLine ? 'pipe' : 'ignore'],
      });
    } finally {
      closeSync(log);
    }
    const pid = child.pid;
    if (pid === undefined) throw new Error(`could not start ${this.spec.name}`);
    this.child = child;
    this.pids.push(pid);
    this.starts += 1;
    this.expectingExit = false;
    this.registry.add(pid);
    const control = child.stdio[3] as Readable | null | undefined;
    if (control && this.spec.onControlLine) {
      const onLine = this.spec.onControlLine;
      createInterface({ input: control }).on('line', (line) => onLine(line, this));
    }
    child.once('exit', (code, signal) => this.onExit(child, pid, code, signal));
    for (const listener of this.startListeners) listener(pid);
  }

  /**
   * Sends `signal` to the whole group. The exit that follows counts as planned; the process is
   * restarted after `restartAfterMs` (default: the spec's delay) unless the spec says otherwise.
   */
  kill(signal: NodeJS.Signals, restartAfterMs?: number): boolean {
    const pid = this.child?.pid;
    if (pid === undefined) return false;
    this.expectingExit = true;
    this.nextRestartDelayMs = restartAfterMs;
    killGroup(pid, signal);
    return true;
  }

  /** Resolves once the current process (if any) has exited. */
  exited(): Promise<void> {
    if (!this.child) return Promise.resolve();
    return new Promise((resolve) => this.exitWaiters.push(resolve));
  }

  /** Stops for good: no restart; SIGKILL unless a gentler signal is given. */
  async stop(signal: NodeJS.Signals = 'SIGKILL', graceMs = 10_000): Promise<void> {
    this.stopped = true;
    clearTimeout(this.restartTimer);
    if (!this.child) return;
    const exited = this.exited();
    this.kill(signal);
    const timer = setTimeout(() => this.kill('SIGKILL'), graceMs);
    await exited;
    clearTimeout(timer);
  }

  private onExit(
    child: ChildProcess,
    pid: number,
    code: number | null,
    signal: NodeJS.Signals | null,
  ): void {
    if (this.child !== child) return;
    this.child = undefined;
    // The group may hold children of the process; take them down with it.
    killGroup(pid, 'SIGKILL');
    this.registry.remove(pid);
    const planned = this.expectingExit;
    this.exits.push({
      at: Date.now(),
      pid,
      code,
      signal,
      planned,
      ...(planned ? {} : { reason: lastError(this.spec.logFile) }),
    });
    const waiters = this.exitWaiters;
    this.exitWaiters = [];
    for (const resolve of waiters) resolve();
    if (this.stopped || !this.spec.restart) return;
    const delay = this.nextRestartDelayMs ?? this.spec.restartDelayMs;
    this.nextRestartDelayMs = undefined;
    this.restartTimer = setTimeout(() => this.start(), delay);
  }
}

/** The last line that names an error in the tail of a log file (a crash's stack starts so). */
function lastError(logFile: string): string | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(logFile, 'r');
    const size = fstatSync(fd).size;
    const length = Math.min(size, 16_384);
    const buffer = Buffer.alloc(length);
    readSync(fd, buffer, 0, length, size - length);
    const lines = buffer.toString('utf8').split('\n');
    return lines
      .filter((l) => /^\w*Error\b|^\S+::\S*Error/.test(l.trim()))
      .pop()
      ?.trim();
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

function killGroup(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pid, signal);
  } catch {
    // Already gone.
  }
}
