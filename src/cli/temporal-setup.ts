import type { Connection } from '@temporalio/client';
import { DEFAULT_RETENTION_DAYS, ensureTemporalSetup, type SetupStep } from '../temporal/setup';
import { atMost, createProgram, onProgram, parseCommandLine, wholeOption } from './command-line';
import { type CliIo, processIo } from './io';
import { withTemporalClient } from './temporal-session';
import { runMain } from '../process/run-main';

// `npm run temporal:setup`: idempotent, so it runs on every deploy.

function commandLine() {
  const program = createProgram(
    'npm run temporal:setup',
    'Registers on the configured Temporal cluster what the app needs, leaving what exists alone.',
  )
    .usage('[-- --retention-days <N>]')
    .option(
      '--retention-days <N>',
      `retention of a namespace created here (default ${DEFAULT_RETENTION_DAYS})`,
    )
    .addHelpText(
      'after',
      `
What it registers:
  namespace          TEMPORAL_NAMESPACE, created with --retention-days (default ${DEFAULT_RETENTION_DAYS}) if missing
                     and the cluster allows it (Temporal Cloud does not: create it there)
  search attributes  OrderId (Int), PaymentEventId (Keyword): payments cannot start without them
  schedule           aggregate-stock (every 5 minutes, overlap SKIP)

Connects as every process does: TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TLS_*, TEMPORAL_API_KEY,
or a temporal.toml profile (TEMPORAL_PROFILE, TEMPORAL_CONFIG_FILE).`,
    );
  return onProgram(program, (args, options) => {
    atMost(args, 0);
    // The server's bounds: at least a day; Cloud allows up to 90.
    const days = wholeOption(options, '--retention-days', 1, 3650);
    return days ?? DEFAULT_RETENTION_DAYS;
  });
}

export async function main(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  const parsed = await parseCommandLine<number>(commandLine(), argv, io);
  if (parsed.kind === 'help') return 0;
  if (parsed.kind === 'usage-error') return 2;
  const retentionDays = parsed.work;

  return withTemporalClient(io, 'temporal:setup', async (client) => {
    // withTemporalClient connects with a full Connection: the operator service is on it.
    const connection = client.connection as Connection;
    io.out(`Setting up namespace ${client.options.namespace} at ${connection.options.address}:`);
    const result = await ensureTemporalSetup({
      connection,
      client,
      namespace: client.options.namespace,
      retentionDays,
      onStep: (step) => io.out(formatStep(step)),
    });
    io.out(
      result.ok
        ? 'Done: the app can run on this namespace.'
        : 'Not done: the app cannot take payments here until the steps above are fixed.',
    );
    return result.ok ? 0 : 1;
  });
}

function formatStep(step: SetupStep): string {
  const lines = [`  ${step.step.padEnd(18)} ${step.outcome.padEnd(12)} ${step.detail}`];
  for (const todo of step.todo ?? []) lines.push(`      ${todo}`);
  return lines.join('\n');
}

if (require.main === module) runMain(() => main(process.argv.slice(2)));
