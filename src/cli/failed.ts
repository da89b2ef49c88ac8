import type { Client } from '@temporalio/client';
import type { Command } from 'commander';
import {
  awaitDeletion,
  type FailedWorkflow,
  flushFailedWorkflows,
  listFailedWorkflows,
} from '../operator/failed-workflows';
import { type Column, formatTable } from '../operator/table';
import { UsageError, wholeOption } from './command-line';
import { type CliIo, EXIT_OK, EXIT_PROBLEM } from './io';
import { addTypedCommand, describeFailure, reportUndecodable, timestamp } from './report';

// A server deletes a closed run once it has recorded that the close was processed, which a
// default server does every 30 s: a minute covers that and the retries of the deletion.
const DELETION_WAIT_MS = 60_000;

export function addFailedCommands(program: Command, io: CliIo): void {
  addTypedCommand(program, io, 'failed', '[--type T] [--limit N]', (options, workflowType) => {
    const limit = wholeOption(options, '--limit', 1);
    return (c) => failedCommand(c, io, { workflowType, limit });
  })
    .summary('list workflows whose latest run failed')
    .description(
      `Lists every workflow whose latest run is Failed, most recent failure first: workflow ID, type,
order ID (from the workflow's memo, "-" when it has none), the failure (type and message) and its
root cause, and when it failed. A workflow that failed and was then retried successfully is not
listed, although visibility still shows its old Failed run.`,
    )
    .option('-n, --limit <N>', 'show at most N (default: all)');

  addTypedCommand(program, io, 'flush', '[--type T] [--yes]', (options, type) => {
    const confirmed = options.yes === true;
    const ask = io.interactive ? io.ask : undefined;
    if (!confirmed && !ask) {
      throw new UsageError(
        'flush deletes workflows; without a terminal to confirm on, pass --yes.',
      );
    }
    return (c) => flushCommand(c, io, type, confirmed ? undefined : ask);
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
    .option('-y, --yes', 'do not ask (required when standard input is not a terminal)');
}

const FAILED_COLUMNS: Column[] = [
  { header: 'WORKFLOW ID' },
  { header: 'TYPE' },
  { header: 'ORDER' },
  { header: 'FAILURE', maxWidth: 60 },
  { header: 'ROOT CAUSE', maxWidth: 70 },
  { header: 'FAILED AT' },
];

function failedTable(workflows: readonly FailedWorkflow[]): string {
  return formatTable(
    FAILED_COLUMNS,
    workflows.map((w) => [
      w.workflowId,
      w.type,
      w.orderId ?? (w.undecodable ? '?' : '-'),
      describeFailure(w.failure),
      describeFailure(w.failure.rootCause),
      timestamp(w.failedAt),
    ]),
  );
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
  io.out(failedTable(failed));
  reportUndecodable(io, failed);
  io.out(
    `\n${failed.length} failed workflow(s). Retry one: npm run ops -- retry <workflowId>; ` +
      'all: npm run ops -- retry all',
  );
  return EXIT_OK;
}

async function flushCommand(
  client: Client,
  io: CliIo,
  workflowType: string | undefined,
  /** Undefined: confirmed with --yes. */
  ask: CliIo['ask'],
): Promise<number> {
  const failed = await listFailedWorkflows(client, { workflowType });
  if (failed.length === 0) {
    io.out('No failed workflows to flush.');
    return EXIT_OK;
  }
  io.out(failedTable(failed));
  reportUndecodable(io, failed);
  if (ask) {
    const answer = await ask(
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
