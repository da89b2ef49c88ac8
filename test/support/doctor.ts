import { setTimeout as delay } from 'node:timers/promises';
import type { CheckStatus } from '../../src/doctor';
import { timedOut } from '../../src/doctor/types';

/** What `npm run ops -- doctor` printed, read by check. */
export interface DoctorReport {
  code: number;
  text: string;
  /** The table row of a check ('' when absent). */
  line(check: string): string;
  status(check: string): CheckStatus | undefined;
  /** The checks that could not tell (UNKNOWN): their call got no answer in time. */
  couldNotTell: string[];
}

const STATUS = 'OK|WARN|FAIL|UNKNOWN|SKIP';

export function readDoctorReport(code: number, text: string): DoctorReport {
  const lines = text.split('\n');
  const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return {
    code,
    text,
    line: (check) => lines.find((l) => l.startsWith(`${check} `)) ?? '',
    status: (check) =>
      new RegExp(`^${escape(check)}\\s+(${STATUS})\\s`, 'm').exec(text)?.[1] as
        CheckStatus | undefined,
    couldNotTell: lines.flatMap((l) => /^(\S.*?)\s+UNKNOWN\s+could not tell:/.exec(l)?.[1] ?? []),
  };
}

export interface UntilOptions {
  /** Default: 60 s, a dozen doctors whose calls all run out of 5 s. */
  timeoutMs?: number;
  /** Default: 500 ms. */
  intervalMs?: number;
}

/**
 * Runs the doctor again while it could not tell (an UNKNOWN row: a call of it got no answer in
 * time, as under load), and returns its first report that tells. That is the only answer taken
 * for "not yet": the caller's assertions judge the report returned, so any other wrong answer
 * fails at once. A doctor that never tells fails, saying so, not as a timeout of the test.
 */
export async function untilTheDoctorCanTell<R extends DoctorReport>(
  run: () => Promise<R>,
  options: UntilOptions = {},
): Promise<R> {
  return untilItCanTell(
    run,
    (report) => report.couldNotTell.length > 0,
    options,
    (report, runs) =>
      [
        `the doctor could not tell in ${runs} run(s): ${report.couldNotTell.join(', ')} stayed UNKNOWN`,
        report.text,
      ].join('\n'),
  );
}

/**
 * The same for one call under a deadline (a readiness check, say): a call that ran out of time
 * (DEADLINE_EXCEEDED, our own deadline) is made again; its answer, value or error, is returned
 * or thrown at once.
 */
export async function untilAnswered<T>(
  call: () => Promise<T>,
  options: UntilOptions = {},
): Promise<T> {
  type Outcome = { value: T } | { error: unknown };
  const outcome = await untilItCanTell<Outcome>(
    () =>
      call().then(
        (value) => ({ value }),
        (error: unknown) => ({ error }),
      ),
    (o) => 'error' in o && timedOut(o.error),
    options,
    (o, runs) => `no answer in time in ${runs} call(s): ${String((o as { error: unknown }).error)}`,
  );
  if ('error' in outcome) throw outcome.error;
  return outcome.value;
}

async function untilItCanTell<T>(
  run: () => Promise<T>,
  couldNotTell: (outcome: T) => boolean,
  { timeoutMs = 60_000, intervalMs = 500 }: UntilOptions,
  explain: (last: T, runs: number) => string,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let runs = 1; ; runs += 1) {
    const outcome = await run();
    if (!couldNotTell(outcome)) return outcome;
    if (Date.now() > deadline) throw new Error(explain(outcome, runs));
    // Said, so a slow run shows why it took longer (and how often a machine runs out of time).
    console.warn(`could not tell yet, asking again: ${explain(outcome, runs).split('\n')[0]}`);
    await delay(intervalMs);
  }
}
