import { hostname, userInfo } from 'node:os';
import { createInterface } from 'node:readline/promises';
import type { Client } from '@temporalio/client';
import { addCommand, atMost, createProgram, parseCommandLine, UsageError } from './command-line';
import { DEFAULT_TEMPORAL_ADDRESS, withTemporalClient } from './temporal-session';
import {
  awaitDeletion,
  type FailedWorkflow,
  flushFailedWorkflows,
  listFailedWorkflows,
} from '../operator/failed-workflows';
import type { FailureSummary } from '../operator/failures';
import {
  RetryRefusedError,
  retryAllFailed,
  retryFailedWorkflow,
  type RetryResult,
} from '../operator/retry';
import { DEFAULT_MIN_ATTEMPTS, inspectRunningWorkflows } from '../operator/stuck';
import { type Column, formatTable } from '../operator/table';
import { describeUndecodable, type UndecodablePayloads } from '../operator/visibility';
import { runMain } from '../process/run-main';
import { unmatchedMain } from './unmatched';

/**
 * The operator inbox: `npm run ops -- <command>`. What the seed did with `queue:failed`,
 * `queue:retry` and `queue:flush` over its failed_jobs table, done on Temporal's own record of
 * failed workflows. See docs/operator.md.
 */

export const EXIT_OK = 0;
/** Something the operator asked for was refused or went wrong (nothing half-done is hidden). */
export const EXIT_PROBLEM = 1;
/** The command line itself is wrong; nothing was sent to Temporal. */
export const EXIT_USAGE = 2;

/** Where the CLI reads and writes, so tests can run it in-process. */
export interface CliIo {
  /** Writes one line (or several) to standard output. */
  out(text: string): void;
  /** Writes one line (or several) to standard error. */
  err(text: string): void;
  /** Whether a person can answer a question (standard input is a terminal). */
  interactive: boolean;
  /** Asks a question on the terminal and returns the answer. */
  ask(question: string): Promise<string>;
  /** Who runs the command: recorded as the reason of a retry. */
  user: string;
  /** Environment to read the configuration from; the process's own when undefined. */
  env?: NodeJS.ProcessEnv;
}

// A server deletes a closed run once it has recorded that the close was processed, which a
// default server does every 30 s: a minute covers that and the retries of the deletion.
const DELETION_WAIT_MS = 60_000;

type Work = (client: Client) => Promise<number>;

/** The command line: its commands, options and help. */
function commandLine(io: CliIo) {
  const program = createProgram(
    'npm run ops --',
    'The operator inbox: failed and stuck workflows on Temporal.',
  ).addHelpText(
    'after',
    `
Run "npm run ops -- <command> --help" for the details of one command.
The unmatched inbox (signed deliveries no workflow could act on): npm run ops -- unmatched --help

Connects to TEMPORAL_ADDRESS (unset: ${DEFAULT_TEMPORAL_ADDRESS}, the dev server of npm start)
in TEMPORAL_NAMESPACE (default: default).

Exit codes: 0 done, 1 refused or failed (see the message), 2 wrong command line.
A workflow whose payloads cannot be decoded with PAYLOAD_ENCRYPTION_KEY is listed with a line
saying so, and does not change the exit code.`,
  );
  // "<value>": the placeholder a missing value is reported with ("Option '-t, --type <value>'
  // argument missing"), the same for every command.
  const typeOption = [
    '-t, --type <value>',
    'only workflows of this type, e.g. paymentWorkflow',
  ] as const;

  addCommand<Work>(program, 'failed', '[--type T] [--limit N]', (args, options) => {
    atMost(args, 0);
    const limit = positiveInteger('--limit', options.limit as string | undefined);
    const workflowType = options.type as string | undefined;
    return (client) => failedCommand(client, io, { workflowType, limit });
  })
    .summary('list workflows whose latest run failed')
    .description(
      `Lists every workflow whose latest run is Failed, most recent failure first: workflow ID, type,
order ID (from the workflow's memo, "-" when it has none), the failure (type and message) and its
root cause, and when it failed. A workflow that failed and was then retried successfully is not
listed, although visibility still shows its old Failed run.`,
    )
    .option(...typeOption)
    .option('-n, --limit <N>', 'show at most N (default: all)');

  addCommand<Work>(program, 'retry', '<workflowId> | all [--type T]', (args, options) => {
    const [target] = atMost(args, 1);
    const workflowType = options.type as string | undefined;
    if (target === undefined) throw new UsageError('Name the workflow to retry, or "all".');
    if (target === 'all') return (client) => retryAllCommand(client, io, workflowType);
    if (workflowType !== undefined) {
      throw new UsageError('--type filters "retry all"; "retry <workflowId>" names one workflow.');
    }
    return (client) => retryOneCommand(client, io, target);
  })
    .summary('re-run failed workflows from the step that failed')
    .description(
      `npm run ops -- retry <workflowId>
npm run ops -- retry all [--type <WorkflowType>]

Re-runs a failed workflow with the same input, from the step that failed. It resets the failed
run to the workflow task that scheduled the activity whose failure failed the workflow (found by
following the failure's cause chain); when no activity failed (the workflow code itself did), to
the first workflow task. The activity runs again with a fresh retry policy: all its attempts and
its whole deadline. The new run keeps the workflow ID, the input, the signals received and every
result recorded before that point: an order's workflow keeps the payment it was handed and asks
the warehouse again. A fresh start would have none of that (and a payment workflow started anew
finds its payment recorded and stops).

Only a workflow whose latest run is Failed is retried. "retry <workflowId>" refuses any other
(Completed, Running, Terminated…) and exits 1, so a completed payment is never run twice.
"retry all" skips and reports those, and exits 1 if a retry failed. Each retry prints the ID of
the new run.`,
    )
    .option(typeOption[0], 'with "all": only workflows of this type');

  addCommand<Work>(program, 'flush', '[--type T] [--yes]', (args, options) => {
    atMost(args, 0);
    const confirmed = options.yes === true;
    if (!confirmed && !io.interactive) {
      throw new UsageError(
        'flush deletes workflows; without a terminal to confirm on, pass --yes.',
      );
    }
    return (client) => flushCommand(client, io, options.type as string | undefined, confirmed);
  })
    .summary('delete failed workflows')
    .description(
      `Deletes the workflows that "failed" lists (each Failed run of them), after listing them and
asking for confirmation, and waits (up to a minute) until the server has removed them.

Deleting is final: the history is gone and the server forgets the workflow ID, so a later start
under that ID is accepted as new. For a payment workflow, a redelivery of its event then starts
a new run, which finds the payment already recorded and does nothing more. For an order's
workflow, its payment workflow has completed, so a redelivery is still a duplicate and does
nothing. Either way the flushed work is not done by anyone: retry what should still happen,
flush only what nobody will retry.

A workflow that changed after it was listed (retried by someone else, say) is left alone.`,
    )
    .option(...typeOption)
    .option('-y, --yes', 'do not ask (required when standard input is not a terminal)');

  addCommand<Work>(program, 'stuck', '[--min-attempts N] [--type T]', (args, options) => {
    atMost(args, 0);
    const minAttempts = positiveInteger(
      '--min-attempts',
      options.minAttempts as string | undefined,
    );
    const workflowType = options.type as string | undefined;
    return (client) => stuckCommand(client, io, { minAttempts, workflowType });
  })
    .summary('list running workflows whose work keeps failing')
    .description(
      `Lists running workflows that are not getting anywhere:
  - an activity on attempt N or later, with its last failure and when the server runs it next
    (e.g. notifyWarehouse while the warehouse is down, recordPayment while the database is);
  - a workflow task past its first attempt: the workflow code itself throws, for example
    non-determinism after a bad deploy. It retries forever until the code is fixed.
Reads the description (pending activities and workflow task) of every running workflow, and the
recent history of one whose workflow task fails. To act on a retrying activity (pause it, retry
it now, change its retry options) use the Temporal CLI: see docs/operator.md.

ATTEMPTS is the attempt the work is on, or will make next.`,
    )
    .option(
      '-m, --min-attempts <N>',
      `activity attempts that count as stuck (default: ${DEFAULT_MIN_ATTEMPTS})`,
    )
    .option(...typeOption);

  return program;
}

/** Runs one command and resolves to the process exit code; errors are reported on `io.err`. */
export async function main(argv: readonly string[], io: CliIo = processIo()): Promise<number> {
  // The unmatched inbox lives in the database, not on Temporal: its own commands (cli/unmatched.ts).
  if (argv[0] === 'unmatched') return unmatchedMain(argv.slice(1), io);
  const parsed = await parseCommandLine<Work>(commandLine(io), argv, io);
  if (parsed.kind === 'help') return EXIT_OK;
  if (parsed.kind === 'usage-error') return EXIT_USAGE;
  return withTemporalClient(io, argv[0]!, parsed.work, `ops:${io.user}@${hostname()}`);
}

function positiveInteger(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9]\d*$/.test(value))
    throw new UsageError(`${name} must be a whole number of 1 or more.`);
  return Number(value);
}

const FAILED_COLUMNS: Column[] = [
  { header: 'WORKFLOW ID' },
  { header: 'TYPE' },
  { header: 'ORDER' },
  { header: 'FAILURE', maxWidth: 60 },
  { header: 'ROOT CAUSE', maxWidth: 70 },
  { header: 'FAILED AT' },
];

function failedRows(workflows: readonly FailedWorkflow[]): string[][] {
  return workflows.map((w) => [
    w.workflowId,
    w.type,
    w.orderId ?? (w.undecodable ? '?' : '-'),
    describeFailure(w.failure),
    describeFailure(w.failure.rootCause),
    timestamp(w.failedAt),
  ]);
}

async function failedCommand(
  client: Client,
  io: CliIo,
  filter: { workflowType?: string; limit?: number },
): Promise<number> {
  const failed = await listFailedWorkflows(client, filter);
  if (failed.length === 0) {
    io.out(
      filter.workflowType ? `No failed ${filter.workflowType} workflows.` : 'No failed workflows.',
    );
    return EXIT_OK;
  }
  io.out(formatTable(FAILED_COLUMNS, failedRows(failed)));
  reportUndecodable(io, failed);
  io.out(
    `\n${failed.length} failed workflow(s). Retry one: npm run ops -- retry <workflowId>; ` +
      'all: npm run ops -- retry all',
  );
  return EXIT_OK;
}

async function retryOneCommand(client: Client, io: CliIo, workflowId: string): Promise<number> {
  try {
    const result = await retryFailedWorkflow(client, workflowId, { reason: retryReason(io) });
    io.out(`Retried ${workflowId}: ${describeRetry(result)}`);
    io.out(`New run: ${result.newRunId}`);
    return EXIT_OK;
  } catch (err) {
    if (!(err instanceof RetryRefusedError)) throw err;
    io.err(`Refused: ${err.message}. Nothing was changed.`);
    return EXIT_PROBLEM;
  }
}

async function retryAllCommand(
  client: Client,
  io: CliIo,
  workflowType: string | undefined,
): Promise<number> {
  const outcomes = await retryAllFailed(client, { reason: retryReason(io), workflowType });
  if (outcomes.length === 0) {
    io.out('No failed workflows to retry.');
    return EXIT_OK;
  }
  const rows = outcomes.map((o) => {
    switch (o.kind) {
      case 'retried':
        return [o.workflowId, 'retried', `new run ${o.result.newRunId}`, describeRetry(o.result)];
      case 'skipped':
        return [o.workflowId, 'skipped', `latest run is ${o.status}`, 'nothing changed'];
      case 'error':
        return [o.workflowId, 'error', o.error.message, 'nothing changed'];
    }
  });
  io.out(
    formatTable(
      [{ header: 'WORKFLOW ID' }, { header: 'OUTCOME' }, { header: 'DETAIL' }, { header: 'HOW' }],
      rows,
    ),
  );
  reportUndecodable(
    io,
    outcomes.map((o) => ({
      workflowId: o.workflowId,
      type: o.undecodable?.type ?? '?',
      undecodable: o.undecodable,
    })),
  );
  const count = (kind: string) => outcomes.filter((o) => o.kind === kind).length;
  io.out(`\nRetried ${count('retried')}, skipped ${count('skipped')}, errors ${count('error')}.`);
  return count('error') > 0 ? EXIT_PROBLEM : EXIT_OK;
}

async function flushCommand(
  client: Client,
  io: CliIo,
  workflowType: string | undefined,
  confirmed: boolean,
): Promise<number> {
  const failed = await listFailedWorkflows(client, { workflowType });
  if (failed.length === 0) {
    io.out('No failed workflows to flush.');
    return EXIT_OK;
  }
  io.out(formatTable(FAILED_COLUMNS, failedRows(failed)));
  reportUndecodable(io, failed);
  if (!confirmed) {
    const answer = await io.ask(
      `\nDelete these ${failed.length} failed workflow(s)? Their history is lost and the ` +
        'server forgets their IDs. Type "yes" to delete: ',
    );
    if (answer.trim().toLowerCase() !== 'yes') {
      io.err('Nothing deleted.');
      return EXIT_PROBLEM;
    }
  }
  const result = await flushFailedWorkflows(client, failed);
  for (const { workflow, reason } of result.skipped) {
    io.out(`Skipped ${workflow.workflowId}: ${reason}`);
  }
  if (result.deleted.length === 0) {
    io.out('Deleted 0 failed workflows.');
    return EXIT_OK;
  }
  io.out(
    `Deleting ${result.deleted.length} failed workflow(s): the server removes them in the background…`,
  );
  const remaining = await awaitDeletion(
    client,
    result.deleted.map((w) => w.workflowId),
    { timeoutMs: DELETION_WAIT_MS },
  );
  io.out(`Deleted ${result.deleted.length - remaining.length} failed workflow(s).`);
  if (remaining.length > 0) {
    io.out(
      `The server accepted the deletion of ${remaining.length} more but has not finished: ` +
        `${remaining.join(', ')}. They disappear shortly; nothing else to do.`,
    );
  }
  return EXIT_OK;
}

async function stuckCommand(
  client: Client,
  io: CliIo,
  filter: { minAttempts?: number; workflowType?: string },
): Promise<number> {
  const { stuck, undecodable } = await inspectRunningWorkflows(client, filter);
  if (stuck.length === 0) {
    io.out(
      `Nothing stuck: no running workflow has an activity on attempt ${filter.minAttempts ?? DEFAULT_MIN_ATTEMPTS}+ ` +
        'or a failing workflow task.',
    );
    reportUndecodable(
      io,
      undecodable.map((u) => ({ workflowId: u.workflowId, type: u.type, undecodable: u })),
    );
    return EXIT_OK;
  }
  io.out(
    formatTable(
      [
        { header: 'WORKFLOW ID' },
        { header: 'TYPE' },
        { header: 'STUCK ON' },
        { header: 'ATTEMPTS' },
        { header: 'LAST FAILURE', maxWidth: 70 },
        { header: 'NEXT ATTEMPT' },
      ],
      stuck.map((s) => [
        s.workflowId,
        s.type,
        s.stuckOn.kind === 'activity' ? s.stuckOn.activityType : 'workflow task',
        String(s.attempts),
        s.lastFailure ? describeFailure(s.lastFailure.rootCause) : '-',
        timestamp(s.nextAttemptAt),
      ]),
    ),
  );
  reportUndecodable(
    io,
    undecodable.map((u) => ({ workflowId: u.workflowId, type: u.type, undecodable: u })),
  );
  return EXIT_OK;
}

/**
 * One line per workflow whose payloads cannot be decoded with the configured key(s), after a
 * listing. Such a workflow is listed like any other as far as it can be read; the listing itself
 * succeeded, so these lines do not change the exit code.
 */
function reportUndecodable(
  io: CliIo,
  workflows: readonly { workflowId: string; type: string; undecodable?: UndecodablePayloads }[],
): void {
  const lines = workflows.flatMap((w) =>
    w.undecodable ? [`  ${describeUndecodable(w, w.undecodable)}`] : [],
  );
  if (lines.length === 0) return;
  io.out(
    `\nCannot be read with the configured PAYLOAD_ENCRYPTION_KEY (set the key they were ` +
      `written with, as an extra key, to read them):\n${lines.join('\n')}`,
  );
}

function describeFailure(failure: Pick<FailureSummary, 'type' | 'message'>): string {
  return failure.message ? `${failure.type}: ${failure.message}` : failure.type;
}

function describeRetry(result: RetryResult): string {
  const point = result.resetPoint;
  const from =
    point.kind === 'activity'
      ? `re-runs from ${point.activityType ?? 'the failed activity'}`
      : 're-runs the workflow code from its first step';
  return `reset run ${result.failedRunId} to event ${point.eventId.toString()}, ${from}`;
}

function retryReason(io: CliIo): string {
  return `ops retry by ${io.user}`;
}

/** UTC, to the second: the same on every operator's terminal and in the Web UI's UTC mode. */
function timestamp(date: Date | undefined): string {
  return date ? date.toISOString().replace(/\.\d{3}Z$/, 'Z') : '-';
}

function processIo(): CliIo {
  return {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
    interactive: process.stdin.isTTY === true,
    async ask(question) {
      const rl = createInterface({ input: process.stdin, output: process.stderr });
      try {
        return await rl.question(question);
      } finally {
        rl.close();
      }
    },
    user: currentUser(),
  };
}

function currentUser(): string {
  try {
    return userInfo().username;
  } catch {
    // No passwd entry for this uid (common in containers).
    return `uid ${process.getuid?.() ?? '?'}`;
  }
}

if (require.main === module) {
  runMain(() => main(process.argv.slice(2)), { failureExitCode: EXIT_PROBLEM, stack: true });
}
