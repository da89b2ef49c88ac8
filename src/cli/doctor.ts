import { DEFAULT_BACKLOG_WARN_AT, formatReport, runDoctor } from '../doctor';
import { runMain } from '../process/run-main';
import { atMost, createProgram, onProgram, parseCommandLine, UsageError } from './command-line';

/**
 * `npm run doctor`: is this installation able to take payments? Checks the configuration, the
 * database and its migrations, Temporal, its namespace and search attributes, and that a worker
 * polls every task queue without a pile of waiting tasks; prints one line per check with a hint,
 * and the commands that fix what failed. Exit code 1 on any FAIL: usable as a deploy gate.
 */

export const EXIT_OK = 0;
/** At least one check failed. */
export const EXIT_FAIL = 1;
/** The command line is wrong; nothing was checked. */
export const EXIT_USAGE = 2;

/** Where the doctor writes and which environment it checks, so tests can run it in-process. */
export interface DoctorIo {
  out(text: string): void;
  err(text: string): void;
  /** The environment to check; the process's own when undefined. */
  env?: NodeJS.ProcessEnv;
  /** A poll older than this no longer counts as a live worker; tests on a fast-polling server shorten it. */
  pollerFreshMs?: number;
}

/** The command line: one command, its option and its help. */
function commandLine() {
  const program = createProgram(
    'npm run doctor',
    'Is this installation able to take payments? Exit code 1 on any FAIL: usable as a deploy gate.',
  )
    .usage('[-- --backlog-warn <N>]')
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

Exit codes: 0 no FAIL (warnings allowed), 1 at least one FAIL, 2 wrong command line.`,
    );
  return onProgram(program, (args, options) => {
    atMost(args, 0);
    const backlogWarn = options.backlogWarn as string | undefined;
    if (backlogWarn === undefined) return DEFAULT_BACKLOG_WARN_AT;
    if (!/^\d+$/.test(backlogWarn)) throw new UsageError('--backlog-warn takes a whole number.');
    return Number(backlogWarn);
  });
}

export async function main(argv: readonly string[], io: DoctorIo = processIo()): Promise<number> {
  const parsed = await parseCommandLine<number>(commandLine(), argv, io);
  if (parsed.kind === 'help') return EXIT_OK;
  if (parsed.kind === 'usage-error') return EXIT_USAGE;
  const results = await runDoctor({
    env: io.env ?? process.env,
    backlogWarnAt: parsed.work,
    pollerFreshMs: io.pollerFreshMs,
  });
  io.out(formatReport(results));
  return results.some((r) => r.status === 'FAIL') ? EXIT_FAIL : EXIT_OK;
}

function processIo(): DoctorIo {
  return {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
  };
}

if (require.main === module) {
  runMain(() => main(process.argv.slice(2)), { failureExitCode: EXIT_FAIL, stack: true });
}
