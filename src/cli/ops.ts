import { runMain } from '../process/run-main';
import { addBatchGroup } from './batch';
import { createProgram, parseCommandLine, type Run } from './command-line';
import { addDeploymentGroup } from './deployment';
import { addDoctorCommand } from './doctor';
import { addFailedCommands } from './failed';
import { type CliIo, EXIT_OK, EXIT_PROBLEM, EXIT_USAGE, processIo } from './io';
import { addPartnerGroup } from './partner';
import { addRetryCommand } from './retry';
import { addSettleCommand } from './settle';
import { addStuckCommand } from './stuck';
import { DEFAULT_TEMPORAL_ADDRESS } from './temporal-session';
import { addUnmatchedGroup } from './unmatched';

// Each command or group lives in its own module; docs/operator.md is the reference.

export { type CliIo, EXIT_OK, EXIT_PROBLEM, EXIT_STUCK, EXIT_USAGE } from './io';

function commandLine(io: CliIo) {
  const program = createProgram(
    'npm run ops --',
    'The operator program: failed and stuck workflows, the unmatched inbox, partner pauses, ' +
      'settlements, rollouts, exports and the installation check.',
  ).addHelpText(
    'after',
    `
Run "npm run ops -- <command> --help" for the details of one command, e.g.
npm run ops -- settle --help, npm run ops -- deployment current --help.

Connects to TEMPORAL_ADDRESS (unset: ${DEFAULT_TEMPORAL_ADDRESS}, the dev server of npm start)
in TEMPORAL_NAMESPACE (default: default); unmatched, partner and settle read DATABASE_URL.

Results go to standard output, refusals and failures to standard error. Exit codes: 0 done (or
the check is fine), 1 refused, failed or not fine (see the message), 2 wrong command line,
3 ops stuck found stuck work. A workflow whose payloads cannot be decoded with
PAYLOAD_ENCRYPTION_KEY is listed with a line saying so, and does not change the exit code.`,
  );
  addFailedCommands(program, io);
  addRetryCommand(program, io);
  addStuckCommand(program, io);
  addUnmatchedGroup(program, io);
  addPartnerGroup(program, io);
  addSettleCommand(program, io);
  addDeploymentGroup(program, io);
  addBatchGroup(program, io);
  addDoctorCommand(program, io);
  return program;
}

export async function main(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  const parsed = await parseCommandLine<Run>(commandLine(io), argv, io);
  if (parsed.kind === 'help') return EXIT_OK;
  if (parsed.kind === 'usage-error') return EXIT_USAGE;
  return parsed.work();
}

if (require.main === module) {
  runMain(() => main(process.argv.slice(2)), { failureExitCode: EXIT_PROBLEM, stack: true });
}
