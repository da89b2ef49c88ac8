import {
  type Client,
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdReusePolicy,
  WorkflowNotFoundError,
} from '@temporalio/client';
import type { Command } from 'commander';
import { HEAVY_TASK_QUEUE } from '../shared/constants';
import { EXPORT_ID_PATTERN, exportWorkflowId, type ExportOrdersInput } from '../shared/export';
import type { exportOrdersWorkflow } from '../workflows/batch';
import { exportStatus, type ExportStatus, progressLine, report } from './batch-report';
import {
  addCommand,
  addGroup,
  atMost,
  type Run,
  UsageError,
  wholeOption,
  theArgument,
} from './command-line';
import { type CliIo, EXIT_OK, EXIT_PROBLEM } from './io';
import { withTemporalClient } from './temporal-session';

// `npm run ops -- batch <command>`: see docs/batch.md.

const DEFAULT_WATCH_INTERVAL_MS = 1_000;
/** `--watch` gives up after this many failed polls in a row (Temporal gone for good). */
const MAX_POLL_ERRORS = 10;
const watchOption = ['-w, --watch', 'follow its progress until it ends'] as const;

export function addBatchGroup(parent: Command, io: CliIo): void {
  const program = addGroup(
    parent,
    'batch',
    'export orders to CSV on the heavy workers, with progress',
  )
    .description(
      `Batch work on task queue "${HEAVY_TASK_QUEUE}": export orders to CSV, in chunks of 100.`,
    )
    .addHelpText('after', '\nSee docs/batch.md.');

  addCommand<Run>(
    program,
    'start',
    '[--from ID] [--to ID] [--id EXPORT_ID] [--watch]',
    (args, options) => {
      atMost(args, 0);
      const fromOrderId = wholeOption(options, '--from', 1);
      const toOrderId = wholeOption(options, '--to', 1);
      if (fromOrderId !== undefined && toOrderId !== undefined && fromOrderId > toOrderId) {
        throw new UsageError('--from must not be above --to.');
      }
      const exportId = (options.id as string | undefined) ?? rangeExportId(fromOrderId, toOrderId);
      if (!EXPORT_ID_PATTERN.test(exportId)) {
        throw new UsageError(
          '--id may hold letters, digits, "_", "-" and "." (at most 100, not starting with ".").',
        );
      }
      const input: ExportOrdersInput = { exportId, fromOrderId, toOrderId };
      return () =>
        withTemporalClient(io, 'start', (c) => startCommand(c, io, input, options.watch === true));
    },
  )
    .summary('start an export of orders to CSV')
    .description(
      'Starts an export of the orders with IDs from..to (both included; default: all).\n' +
        'Files: <EXPORT_DIR>/<EXPORT_ID>/orders.csv and index.json on the heavy workers.',
    )
    .option('--from <ID>', 'first order ID')
    .option('--to <ID>', 'last order ID')
    .option(
      '--id <EXPORT_ID>',
      'names the export and its directory (default: its range, e.g. 1000-5000 or first-last)',
    )
    .option(...watchOption);

  addCommand<Run>(
    program,
    'progress',
    '<workflowId | EXPORT_ID> [--watch] [--interval MS]',
    (args, options) => {
      const workflowId = workflowIdOf(
        theArgument(args, 'Name the export: its workflow ID or export ID.'),
      );
      const intervalMs = wholeOption(options, '--interval', 100) ?? DEFAULT_WATCH_INTERVAL_MS;
      return () =>
        withTemporalClient(io, 'progress', (client) =>
          options.watch === true
            ? watchCommand(client, io, workflowId, intervalMs)
            : progressCommand(client, io, workflowId),
        );
    },
  )
    .summary("show an export's progress bar")
    .description("Shows an export's progress bar; --watch follows it until it ends.")
    .option(...watchOption)
    .option(
      '--interval <MS>',
      `milliseconds between polls of --watch (default: ${DEFAULT_WATCH_INTERVAL_MS})`,
    );
}

/** The same range names the same export, so a `start` run again finds the one it started. */
function rangeExportId(fromOrderId: number | undefined, toOrderId: number | undefined): string {
  return `${fromOrderId ?? 'first'}-${toOrderId ?? 'last'}`;
}

async function startCommand(
  client: Client,
  io: CliIo,
  input: ExportOrdersInput,
  watch: boolean,
): Promise<number> {
  const workflowId = exportWorkflowId(input.exportId);
  try {
    await client.workflow.start<typeof exportOrdersWorkflow>('exportOrdersWorkflow', {
      workflowId,
      taskQueue: HEAVY_TASK_QUEUE,
      args: [input],
      // An export ID names one directory: a second export under it would mix two exports.
      workflowIdReusePolicy: WorkflowIdReusePolicy.REJECT_DUPLICATE,
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    return startedBefore(client, io, input.exportId, workflowId, watch);
  }
  const range = `${input.fromOrderId ?? 'first'}..${input.toOrderId ?? 'last'}`;
  io.out(
    `Started export ${input.exportId} of orders ${range} on task queue "${HEAVY_TASK_QUEUE}".`,
  );
  io.out(`Workflow ID: ${workflowId}`);
  io.out(`Files:       <EXPORT_DIR>/${input.exportId}/ of the heavy workers`);
  return followOrPoint(client, io, workflowId, watch);
}

/** `start` of an export that exists: says so and shows where it stands, never a second one. */
async function startedBefore(
  client: Client,
  io: CliIo,
  exportId: string,
  workflowId: string,
  watch: boolean,
): Promise<number> {
  const { status, startTime } = await client.workflow.getHandle(workflowId).describe();
  io.out(
    `Export ${exportId} was started before (${workflowId}, at ${startTime.toISOString()}); ` +
      'not starting it again.',
  );
  if (status.name === 'RUNNING') return followOrPoint(client, io, workflowId, watch);
  io.out('To export again, name a new export: npm run ops -- batch start --id <EXPORT_ID> …');
  return report(io, workflowId, await exportStatus(client, workflowId));
}

async function followOrPoint(client: Client, io: CliIo, workflowId: string, watch: boolean) {
  if (watch) return watchCommand(client, io, workflowId, DEFAULT_WATCH_INTERVAL_MS);
  io.out(`Progress:    npm run ops -- batch progress ${workflowId} --watch`);
  return EXIT_OK;
}

async function progressCommand(client: Client, io: CliIo, workflowId: string) {
  try {
    return report(io, workflowId, await exportStatus(client, workflowId));
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
    io.err(`No export ${workflowId}.`);
    return EXIT_PROBLEM;
  }
}

async function watchCommand(
  client: Client,
  io: CliIo,
  workflowId: string,
  intervalMs: number,
): Promise<number> {
  const sleep = (ms: number) =>
    io.sleep ? io.sleep(ms) : new Promise<void>((r) => setTimeout(r, ms));
  let last = '';
  for (let errors = 0; ;) {
    let status: ExportStatus;
    try {
      status = await exportStatus(client, workflowId);
      errors = 0;
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) {
        io.err(`No export ${workflowId}.`);
        return EXIT_PROBLEM;
      }
      // A run that has just continued as new answers queries only after its first task.
      if (++errors >= MAX_POLL_ERRORS) throw err;
      await sleep(intervalMs);
      continue;
    }
    if (status.kind !== 'running') return report(io, workflowId, status);
    const line = progressLine(status.progress);
    if (line !== last) io.out(line);
    last = line;
    await sleep(intervalMs);
  }
}

/** An export named by its workflow ID or by its export ID, as `progress` takes it. */
function workflowIdOf(name: string): string {
  return name.startsWith(exportWorkflowId('')) ? name : exportWorkflowId(name);
}
