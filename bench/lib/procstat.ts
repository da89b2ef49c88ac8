import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';

/**
 * Per-process CPU time and memory from /proc (Linux), so one benchmark can tell how much each
 * process (load generator, HTTP server, worker, Temporal server) spent, threads included.
 */

let clockTicks: number | undefined;

function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** User + system CPU seconds the process has used so far, all its threads included. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces; the fields after its closing parenthesis don't.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // utime and stime are fields 14 and 15 of the full line, 12 and 13 after the name.
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond();
}

/** Resident set size in bytes (VmRSS), or NaN when the process is gone. */
export function rssBytes(pid: number): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status)?.[1];
    return kb === undefined ? Number.NaN : Number(kb) * 1024;
  } catch {
    return Number.NaN;
  }
}

/** The first process whose argument vector satisfies `match` (ours only: we started it). */
export function findProcess(match: (argv: string[]) => boolean): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const argv = readFileSync(`/proc/${entry}/cmdline`, 'utf8').split('\0').filter(Boolean);
      if (match(argv)) return Number(entry);
    } catch {
      // Gone between the listing and the read.
    }
  }
  return undefined;
}

/** Busy CPU seconds of the whole machine so far, all cores and all processes (/proc/stat). */
export function machineBusySeconds(): number {
  const line = readFileSync('/proc/stat', 'utf8').split('\n')[0]!;
  const [user, nice, system, , , irq, softirq, steal] = line
    .trim()
    .split(/\s+/)
    .slice(1)
    .map(Number);
  return (
    [user, nice, system, irq, softirq, steal].reduce<number>((a, b) => a + (b ?? 0), 0) /
    ticksPerSecond()
  );
}

/**
 * A process, or several counted as one: the services of a multi-service Temporal server, or a
 * PostgreSQL server's backends (listed anew when a meter starts, since connections come and go).
 */
export type ProcessGroup = number | readonly number[] | (() => readonly number[]);

/** The processes of a group, now. */
export function membersOf(group: ProcessGroup): readonly number[] {
  if (typeof group === 'function') return group();
  return typeof group === 'number' ? [group] : group;
}

/**
 * CPU seconds of several processes between two instants, and of the whole machine under the
 * name `machine`: what the machine did besides our processes is other people's work (noise).
 */
export class CpuMeter {
  private readonly start = new Map<string, Map<number, number>>();
  private readonly machineStart: number;

  constructor(pids: Readonly<Record<string, ProcessGroup>>) {
    for (const [name, group] of Object.entries(pids)) {
      this.start.set(name, new Map(membersOf(group).map((pid) => [pid, cpuSeconds(pid)])));
    }
    this.machineStart = machineBusySeconds();
  }

  /** CPU seconds each process (or group), and the machine, used since this meter was made. */
  read(): Record<string, number> {
    const used: Record<string, number> = {};
    for (const [name, members] of this.start) {
      let total = 0;
      for (const [pid, before] of members) {
        try {
          total += cpuSeconds(pid) - before;
        } catch {
          // Exited meanwhile (a closed database connection): its last seconds are not counted.
        }
      }
      used[name] = total;
    }
    used.machine = machineBusySeconds() - this.machineStart;
    return used;
  }
}

/** The processes whose parent is `pid` (a PostgreSQL postmaster's backends). */
export function childrenOf(pid: number): number[] {
  const children: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // ppid is the second field after the command name's closing parenthesis.
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) {
        children.push(Number(entry));
      }
    } catch {
      // Gone between the listing and the read.
    }
  }
  return children;
}
