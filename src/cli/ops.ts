import { hostname, userInfo } from 'node:os';
import { createInterface } from 'node:readline/promises';
import type { Client } from '@temporalio/client';
import { addCommand, atMost, createProgram, parseCommandLine, UsageError } from './command-line';
import { DEFAULT_TEMPORAL_ADDRESS, errorMessage, withTemporalClient } from './temporal-session';
import {
  awaitDeletion,
  type FailedWorkflow,
  flushFailedWorkflows,
  listFailedWorkflows,
} from '../operator/failed-workflows';
import type { FailureSummary } from '../operator/failures';
import {
  DEFAULT_RESETS_PER_SECOND,
  RetryCannotHelpError,
  RetryRefusedError,
  retryAllFailed,
  type RetryAllOptions,
  retryFailedWorkflow,
  type RetryOptions,
  type RetryPlan,
  type RetryResult,
} from '../operator/retry';
import { awaitRetryOutcome, isProblem, type RetryOutcome } from '../operator/retry-outcome';
import { DEFAULT_MIN_ATTEMPTS, groupByCause, inspectRunningWorkflows } from '../operator/stuck';
import { type Column, formatTable } from '../operator/table';
import {
  DESCRIBE_CONCURRENCY,
  describeUndecodable,
  mapConcurrently,
  type UndecodablePayloads,
} from '../operator/visibility';
import { runMain } from '../process/run-main';
import { heldWorkflowIds } from '../operator/partner';
import { PARTNERS } from '../shared/partner';
import { partnerMain } from './partner';
import { settleMain } from './settle';
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
/** `ops stuck` found stuck work: cron and monitoring act on this code. */
export const EXIT_STUCK = 3;

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

// A payment or an order that the retry fulfils completes within seconds; one that is still
// retrying its warehouse call after this is reported as running, with the step it is on.
const DEFAULT_RETRY_WAIT_SECONDS = 20;

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
Pause a partner during its outage, resume it at a rate: npm run ops -- partner --help
Settle a pending order with the payments it has: npm run ops -- settle --help

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

  addCommand<Work>(
    program,
    'retry',
    '<workflowId> | all [--type T] [--root-cause T] [--since D] [--dry-run] [--rate N] [--wait S]',
    (args, options) => {
      const [target] = atMost(args, 1);
      const workflowType = options.type as string | undefined;
      const waitMs =
        1000 *
        (wholeNumber('--wait', options.wait as string | undefined) ?? DEFAULT_RETRY_WAIT_SECONDS);
      if (target === undefined) throw new UsageError('Name the workflow to retry, or "all".');
      if (target === 'all') {
        const filter: RetryAllFilter = {
          workflowType,
          rootCause: options.rootCause as string | undefined,
          since: since(options.since as string | undefined),
          dryRun: options.dryRun === true,
          resetsPerSecond: positiveInteger('--rate', options.rate as string | undefined),
        };
        return (client) => retryAllCommand(client, io, filter, waitMs);
      }
      for (const [name, value] of [
        ['--type', workflowType],
        ['--root-cause', options.rootCause],
        ['--since', options.since],
        ['--dry-run', options.dryRun],
        ['--rate', options.rate],
      ] as const) {
        if (value !== undefined) {
          throw new UsageError(
            `${name} filters "retry all"; "retry <workflowId>" names one workflow.`,
          );
        }
      }
      return (client) => retryOneCommand(client, io, target, waitMs);
    },
  )
    .summary('re-run failed workflows from the step that failed')
    .description(
      `npm run ops -- retry <workflowId>
npm run ops -- retry all [--type <WorkflowType>]

Re-runs a failed workflow with the same input, from the step that failed. It resets the failed
run to the workflow task that scheduled the activity whose failure failed the workflow (found by
following the failure's cause chain), or, for a step that ran as a local activity, to the task of
its first attempt; when no activity failed (the workflow code itself did), to the first workflow
task. The step runs again with a fresh retry policy: all its attempts and its whole deadline.
The new run keeps the workflow ID, the input, the signals received and every result recorded
before that point: an order's workflow keeps the payment it was handed and asks the warehouse
again; a payment records (finds) its payment and hands it over again.

Then it follows the new run for up to --wait seconds and says what it did: completed (and, for a
payment, handed over; for an order, processed the event that failed), still running (on which
step), failed again, or completed without doing the work. Exit code 1 unless the work was done or
is still under way.

Only a workflow whose latest run is Failed is retried. "retry <workflowId>" refuses any other
(Completed, Running, Terminated…) and exits 1, so a completed payment is never run twice. It
also refuses, saying what to do instead, a failure that its input meets on every run (an event
recorded with another order or amount, an invalid export request). "retry all" skips and reports
those, and exits 1 if a retry failed, was refused or did nothing.

"retry all" reads the candidates from visibility (--type and --since are part of its query) and
each failed run's history (--root-cause is the type "failed" shows as ROOT CAUSE), then resets
one at a time, at most --rate a second. Each reset's request ID is derived from the failed run's
ID, and only a workflow whose latest run is still Failed is reset, so an interrupted "retry all"
can be run again: nothing is reset twice. --dry-run lists what it would reset and from where.`,
    )
    .option(typeOption[0], 'with "all": only workflows of this type')
    .option(
      '--root-cause <type>',
      'with "all": only failures whose root cause has this type, e.g. WarehouseUnavailable',
    )
    .option(
      '--since <D>',
      'with "all": only failures since D ago (90s, 30m, 2h, 1d) or an ISO time',
    )
    .option('--dry-run', 'with "all": say what would be retried and from where; change nothing')
    .option(
      '--rate <N>',
      `with "all": at most N resets a second (default: ${DEFAULT_RESETS_PER_SECOND})`,
    )
    .option(
      '-w, --wait <S>',
      `seconds to follow the new run(s) before reporting (default: ${DEFAULT_RETRY_WAIT_SECONDS}; 0: look once)`,
    );

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
under that ID is accepted as new. For an order's workflow, the failed run recorded that it
finished with its payment, so a redelivery does nothing: the flushed work is not done by anyone.
A payment whose hand-over gave up never reached an order run: a redelivery of its event after
the flush hands it over, and the order is fulfilled after all. Retry what should still happen;
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
    .summary('list running workflows whose work keeps failing, grouped by cause; exit 3 if any')
    .description(
      `Lists running workflows that are not getting anywhere, grouped by cause (the activity type,
or the workflow task, and the type of its last failure), largest group first:
  - an activity on attempt N or later, with its last failure and when the server runs it next
    (e.g. notifyWarehouse while the warehouse is down, recordPayment while the database is);
  - an activity an operator paused (temporal activity pause), whatever its attempt: no attempt
    runs until someone unpauses or resets it, so it shows no next retry;
  - a workflow task past its first attempt: the workflow code itself throws, for example
    non-determinism after a bad deploy. It retries forever until the code is fixed.
Runs held by a partner pause (npm run ops -- partner pause) are listed first, by partner; they
are not stuck (they spend nothing) and do not change the exit code.
Each row names the order, the attempt (of the retry policy's maximum), the next retry and
whether it is paused. Reads the description of every running workflow, and the recent history
of one whose workflow task fails. To act on a retrying activity use the Temporal CLI
(npm run temporal -- activity pause|unpause|reset|update-options): see docs/operations.md.

Exit codes: 0 nothing stuck, 3 something is stuck (for cron and monitoring), 1 the check
itself failed, 2 wrong command line.`,
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
  // So does the partner pause: it must work while Temporal is in trouble too (cli/partner.ts).
  if (argv[0] === 'partner') return partnerMain(argv.slice(1), io);
  // A settlement is written to the database first, and stands while Temporal is down (cli/settle.ts).
  if (argv[0] === 'settle') return settleMain(argv.slice(1), io);
  const parsed = await parseCommandLine<Work>(commandLine(io), argv, io);
  if (parsed.kind === 'help') return EXIT_OK;
  if (parsed.kind === 'usage-error') return EXIT_USAGE;
  return withTemporalClient(io, argv[0]!, parsed.work, `ops:${io.user}@${hostname()}`);
}

const SINCE_UNITS_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** `--since`: an age (90s, 30m, 2h, 1d) before now, or an ISO-8601 time. */
function since(value: string | undefined, now = Date.now()): Date | undefined {
  if (value === undefined) return undefined;
  const age = /^(\d+)([smhd])$/.exec(value);
  if (age) return new Date(now - Number(age[1]) * SINCE_UNITS_MS[age[2]!]!);
  const at = /^\d{4}-\d{2}-\d{2}/.test(value) ? Date.parse(value) : Number.NaN;
  if (Number.isNaN(at)) {
    throw new UsageError(
      '--since takes an age (90s, 30m, 2h, 1d) or an ISO time (2026-12-01T08:00Z).',
    );
  }
  return new Date(at);
}

function wholeNumber(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d+$/.test(value)) throw new UsageError(`${name} must be a whole number of 0 or more.`);
  return Number(value);
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

async function retryOneCommand(
  client: Client,
  io: CliIo,
  workflowId: string,
  waitMs: number,
): Promise<number> {
  let result: RetryResult;
  try {
    result = await retryFailedWorkflow(client, workflowId, { reason: retryReason(io) });
  } catch (err) {
    if (err instanceof RetryCannotHelpError) {
      io.err(`Refused: ${err.message}. Nothing was changed.\nInstead: ${err.instead}.`);
      return EXIT_PROBLEM;
    }
    if (!(err instanceof RetryRefusedError)) throw err;
    io.err(`Refused: ${err.message}. Nothing was changed.`);
    return EXIT_PROBLEM;
  }
  io.out(`Retried ${workflowId}: ${describeRetry(result)}`);
  io.out(`New run: ${result.newRunId}`);
  const outcome = await awaitRetryOutcome(client, result, { waitMs });
  const line = `Outcome: ${describeOutcome(outcome, waitMs)}`;
  if (!isProblem(outcome)) {
    io.out(line);
    return EXIT_OK;
  }
  io.err(line);
  return EXIT_PROBLEM;
}

type RetryAllFilter = Omit<RetryAllOptions, keyof RetryOptions>;

async function retryAllCommand(
  client: Client,
  io: CliIo,
  filter: RetryAllFilter,
  waitMs: number,
): Promise<number> {
  const outcomes = await retryAllFailed(client, { reason: retryReason(io), ...filter });
  if (outcomes.length === 0) {
    io.out('No failed workflows to retry.');
    return EXIT_OK;
  }
  // Every retry is made first, then all are followed within one wait.
  const followed = await mapConcurrently(outcomes, DESCRIBE_CONCURRENCY, async (o) =>
    o.kind === 'retried' ? awaitRetryOutcome(client, o.result, { waitMs }) : undefined,
  );
  const rows = outcomes.map((o, i): string[] => {
    switch (o.kind) {
      case 'retried': {
        const outcome = followed[i]!;
        return [
          o.workflowId,
          OUTCOME_NAMES[outcome.kind],
          `new run ${o.result.newRunId}: ${describeOutcome(outcome, waitMs)}`,
          describeRetry(o.result),
        ];
      }
      case 'planned':
        return [o.workflowId, 'would retry', 'dry run: nothing changed', describeRetry(o.plan)];
      case 'skipped':
        return [o.workflowId, 'skipped', `latest run is ${o.status}`, 'nothing changed'];
      case 'refused':
        return [o.workflowId, 'refused', o.error.message, `nothing changed; ${o.error.instead}`];
      case 'error':
        return [o.workflowId, 'error', o.error.message, 'nothing changed'];
    }
  });
  io.out(
    formatTable(
      [
        { header: 'WORKFLOW ID' },
        { header: 'OUTCOME' },
        { header: 'DETAIL', maxWidth: 110 },
        { header: 'HOW' },
      ],
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
  const count = (name: string) => rows.filter((r) => r[1] === name).length;
  if (filter.dryRun) {
    io.out(
      `\nDry run: would retry ${count('would retry')}, skip ${count('skipped')}, ` +
        `refuse ${count('refused')}; errors ${count('error')}. Nothing was changed.`,
    );
    return count('error') > 0 ? EXIT_PROBLEM : EXIT_OK;
  }
  const retried = outcomes.filter((o) => o.kind === 'retried').length;
  io.out(
    `\nRetried ${retried} (done ${count('done')}, running ${count('running')}, ` +
      `failed again ${count('failed again')}, did nothing ${count('did nothing')}), ` +
      `skipped ${count('skipped')}, refused ${count('refused')}, errors ${count('error')}.`,
  );
  const problems = followed.filter((o) => o !== undefined && isProblem(o)).length;
  return problems + count('refused') + count('error') > 0 ? EXIT_PROBLEM : EXIT_OK;
}

const OUTCOME_NAMES: Record<RetryOutcome['kind'], string> = {
  completed: 'done',
  running: 'running',
  closed: 'failed again',
  'did-nothing': 'did nothing',
};

function describeOutcome(outcome: RetryOutcome, waitMs: number): string {
  switch (outcome.kind) {
    case 'completed':
      return 'the new run completed and did the work.';
    case 'running':
      return (
        `the new run is running after ${waitMs / 1000} s` +
        (outcome.pending ? `, on ${outcome.pending}` : '') +
        '; follow it with npm run ops -- stuck, or in the Web UI.'
      );
    case 'closed':
      return (
        `the new run ended ${outcome.status}` +
        (outcome.failure ? `: ${describeFailure(outcome.failure)}` : '') +
        (outcome.failure ? ` (root cause ${describeFailure(outcome.failure.rootCause)})` : '') +
        '. npm run ops -- failed lists it again.'
      );
    case 'did-nothing':
      return `nothing was done: ${outcome.reason}.`;
  }
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
  await reportHeld(client, io);
  const unreadable = undecodable.map((u) => ({
    workflowId: u.workflowId,
    type: u.type,
    undecodable: u,
  }));
  if (stuck.length === 0) {
    io.out(
      `Nothing stuck: no running workflow has an activity on attempt ${filter.minAttempts ?? DEFAULT_MIN_ATTEMPTS}+, ` +
        'a paused activity or a failing workflow task.',
    );
    reportUndecodable(io, unreadable);
    return EXIT_OK;
  }
  const groups = groupByCause(stuck);
  io.out(`${stuck.length} stuck in ${groups.length} group(s), by what fails and how:`);
  const now = Date.now();
  for (const group of groups) {
    io.out('');
    io.out(
      `${group.stuckOn} failing with ${group.failureType}: ${group.work.length} run(s)${group.example ? ` (last: ${truncate(group.example, 100)})` : ''}`,
    );
    io.out(
      formatTable(
        [
          { header: 'ORDER' },
          { header: 'WORKFLOW ID' },
          { header: 'TYPE' },
          { header: 'ATTEMPT' },
          { header: 'NEXT RETRY' },
          { header: 'STATE' },
        ],
        group.work.map((s) => [
          s.orderId ?? '-',
          s.workflowId,
          s.type,
          s.maximumAttempts ? `${s.attempts} of ${s.maximumAttempts}` : String(s.attempts),
          s.paused ? '-' : nextRetry(s.nextAttemptAt, now),
          s.paused
            ? 'PAUSED: nothing runs until unpaused'
            : s.stuckOn.kind === 'workflow task'
              ? 'retrying (the code throws)'
              : 'retrying',
        ]),
      )
        .split('\n')
        .map((line) => `  ${line}`)
        .join('\n'),
    );
  }
  reportUndecodable(io, unreadable);
  return EXIT_STUCK;
}

/**
 * The runs holding a call to a paused partner, grouped by partner. Listed, not counted as stuck
 * (no exit 3): an operator chose the pause, and nothing is spent while it lasts.
 */
async function reportHeld(client: Client, io: CliIo): Promise<void> {
  for (const partner of PARTNERS) {
    let held: string[];
    try {
      held = await heldWorkflowIds(client, partner);
    } catch (err) {
      // A namespace without the PartnerPaused attribute (npm run doctor prints its command)
      // refuses the query: the stuck work below is still worth listing.
      io.err(`Could not list the runs held by a ${partner} pause: ${errorMessage(err)}`);
      continue;
    }
    if (held.length === 0) continue;
    held.sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
    io.out(
      `Held by the ${partner} pause: ${held.length} run(s) wait, spending no attempts, for ` +
        `"npm run ops -- partner resume ${partner} [--rate N]" (who paused: ops partner status):`,
    );
    io.out(`  ${held.join(' ')}`);
    io.out('');
  }
}

function nextRetry(at: Date | undefined, now: number): string {
  if (!at) return 'running now';
  const seconds = Math.round((at.getTime() - now) / 1000);
  return `${timestamp(at)} (${seconds <= 0 ? 'due' : `in ${seconds} s`})`;
}

function truncate(text: string, max: number): string {
  const line = text.replace(/\s+/g, ' ');
  return line.length > max ? `${line.slice(0, max - 1)}…` : line;
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

function describeRetry(result: RetryPlan & { newRunId?: string }): string {
  const point = result.resetPoint;
  const from =
    point.kind === 'start'
      ? 're-runs the workflow code from its first step'
      : `re-runs from ${point.activityType ?? 'the failed activity'}`;
  const again = point.rerun.length > 0 ? ` (steps run again: ${point.rerun.join(', ')})` : '';
  const verb = result.newRunId === undefined ? 'would reset' : 'reset';
  return `${verb} run ${result.failedRunId} to event ${point.eventId.toString()}, ${from}${again}`;
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
