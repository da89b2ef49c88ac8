import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
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
import { formatTable } from '../operator/table';
import { DESCRIBE_CONCURRENCY, mapConcurrently } from '../operator/visibility';
import { addCommand, type Run, UsageError, wholeOption, theArgument } from './command-line';
import { type CliIo, EXIT_OK, EXIT_PROBLEM, userOf } from './io';
import { asOperator, describeFailure, reportUndecodable, since, typeOption } from './report';

/** `ops retry`: re-runs failed workflows from the step that failed (the seed's `queue:retry`). */

// A payment or an order that the retry fulfils completes within seconds; one that is still
// retrying its warehouse call after this is reported as running, with the step it is on.
const DEFAULT_RETRY_WAIT_SECONDS = 20;

type RetryAllFilter = Omit<RetryAllOptions, keyof RetryOptions>;

export function addRetryCommand(program: Command, io: CliIo): void {
  addCommand<Run>(
    program,
    'retry',
    '<workflowId> | all [--type T] [--root-cause T] [--since D] [--dry-run] [--rate N] [--wait S]',
    (args, options) => {
      const target = theArgument(args, 'Name the workflow to retry, or "all".');
      const workflowType = options.type as string | undefined;
      const waitMs = 1000 * (wholeOption(options, '--wait') ?? DEFAULT_RETRY_WAIT_SECONDS);
      if (target === 'all') {
        const filter: RetryAllFilter = {
          workflowType,
          rootCause: options.rootCause as string | undefined,
          since: since(options.since as string | undefined),
          dryRun: options.dryRun === true,
          resetsPerSecond: wholeOption(options, '--rate', 1),
        };
        return () => asOperator(io, 'retry', (c) => retryAllCommand(c, io, filter, waitMs));
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
      return () => asOperator(io, 'retry', (c) => retryOneCommand(c, io, target, waitMs));
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
  return `ops retry by ${userOf(io)}`;
}
