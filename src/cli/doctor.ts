import type { Command } from 'commander';
import { type CheckResult, DEFAULT_BACKLOG_WARN_AT, formatReport, runDoctor } from '../doctor';
import { addCommand, atMost, type Run, wholeOption } from './command-line';
import { type CliIo, EXIT_OK, EXIT_PROBLEM } from './io';

/**
 * The doctor's own code beside io.ts's: nothing failed, but a check could not tell (UNKNOWN: its
 * call got no answer in time). Not 0, so a deploy gate still stops; not 1, so a script can run
 * the doctor again instead of reporting a failure nobody saw.
 */
export const EXIT_COULD_NOT_TELL = 4;

/** 1 on any FAIL (seen, so it wins); else 4 on any UNKNOWN; else 0, warnings or not. */
export function doctorExitCode(results: readonly CheckResult[]): number {
  if (results.some((r) => r.status === 'FAIL')) return EXIT_PROBLEM;
  if (results.some((r) => r.status === 'UNKNOWN')) return EXIT_COULD_NOT_TELL;
  return EXIT_OK;
}

/** `npm run ops -- doctor`: exit code 1 on any FAIL, so it can gate a deploy. */
export function addDoctorCommand(program: Command, io: CliIo): void {
  addCommand<Run>(program, 'doctor', '[--backlog-warn <N>]', (args, options) => {
    atMost(args, 0);
    const backlogWarnAt = wholeOption(options, '--backlog-warn') ?? DEFAULT_BACKLOG_WARN_AT;
    return () => doctor(io, backlogWarnAt);
  })
    .summary(
      'is this installation able to take payments? exit 1 on any FAIL, 4 if it could not tell (a deploy gate)',
    )
    .description(
      'Is this installation able to take payments? Exit code 1 on any FAIL, 4 when a check could not tell: usable as a deploy gate.',
    )
    .option(
      '--backlog-warn <N>',
      `WARN when more tasks than this wait for a worker (default ${DEFAULT_BACKLOG_WARN_AT})`,
    )
    .addHelpText(
      'after',
      `
Checks, with the configuration of this environment (the same variables the processes read):
  configuration      as every process validates it at start-up, plus production advice
  database           reachable; every migration of this build applied
  temporal           reachable (TEMPORAL_ADDRESS; unset: the dev server of npm start)
  namespace          exists
  search attributes  the custom ones the workflows set are registered
  workers: <queue>   a worker polled each task queue (payments, heavy) in the last 2 minutes
  backlog: <queue>   tasks waiting for a worker; WARN above --backlog-warn

A check whose call gets no answer within 5 s is UNKNOWN ("could not tell"), never OK nor FAIL:
run the doctor again. A server that refuses the connection or answers an error is a FAIL.

Exit code 1 on any FAIL; else 4 on any UNKNOWN; warnings alone leave it 0.`,
    );
}

async function doctor(io: CliIo, backlogWarnAt: number): Promise<number> {
  const results = await runDoctor({
    env: io.env ?? process.env,
    backlogWarnAt,
    pollerFreshMs: io.pollerFreshMs,
  });
  io.out(formatReport(results));
  return doctorExitCode(results);
}
