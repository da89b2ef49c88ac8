import {
  type Client,
  WorkflowExecutionAlreadyStartedError,
  WorkflowIdReusePolicy,
  WorkflowNotFoundError,
} from '@temporalio/client';
import { addCommand, atMost, createProgram, parseCommandLine, UsageError } from './command-line';
import { DEFAULT_TEMPORAL_ADDRESS, errorMessage, withTemporalClient } from './temporal-session';
import { HEAVY_TASK_QUEUE } from '../shared/constants';
import { runMain } from '../process/run-main';
import {
  EXPORT_ID_PATTERN,
  exportProgressQuery,
  exportWorkflowId,
  type ExportOrdersInput,
  type ExportOrdersResult,
  type ExportProgress,
} from '../shared/export';
import type { exportOrdersWorkflow } from '../workflows/batch';

/**
 * Batch work from the command line: `npm run batch -- <command>`. Starts an order export on
 * task queue `heavy` and shows its progress as a bar. See docs/batch.md.
 */

export const EXIT_OK = 0;
/** The export failed, or Temporal could not be reached (see the message). */
export const EXIT_PROBLEM = 1;
/** The command line itself is wrong; nothing was sent to Temporal. */
export const EXIT_USAGE = 2;

/** Where the CLI reads and writes, so tests can run it in-process. */
export interface BatchCliIo {
  out(text: string): void;
  err(text: string): void;
  /** Environment to read the configuration from; the process's own when undefined. */
  env?: NodeJS.ProcessEnv;
  /** Waits between polls of `--watch` (tests pass a shorter one). */
  sleep?(ms: number): Promise<void>;
}

const DEFAULT_WATCH_INTERVAL_MS = 1_000;
/** `--watch` gives up after this many failed polls in a row (Temporal gone for good). */
const MAX_POLL_ERRORS = 10;
const BAR_WIDTH = 30;

type Work = (client: Client) => Promise<number>;

/** The command line: its commands, options and help. */
function commandLine(io: BatchCliIo) {
  const program = createProgram(
    'npm run batch --',
    `Batch work on task queue "${HEAVY_TASK_QUEUE}": export orders to CSV, in chunks of 100.`,
  ).addHelpText(
    'after',
    `
Connects to TEMPORAL_ADDRESS (unset: ${DEFAULT_TEMPORAL_ADDRESS}, the dev server of npm start)
in TEMPORAL_NAMESPACE (default: default).

Exit codes: 0 done, 1 failed export or Temporal unreachable, 2 wrong command line.`,
  );

  addCommand<Work>(
    program,
    'start',
    '[--from ID] [--to ID] [--id EXPORT_ID] [--watch]',
    (args, options) => {
      atMost(args, 0);
      const fromOrderId = orderId('--from', options.from as string | undefined);
      const toOrderId = orderId('--to', options.to as string | undefined);
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
      return (client) => startCommand(client, io, input, options.watch === true);
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
    .option('-w, --watch', 'follow its progress until it ends');

  addCommand<Work>(
    program,
    'progress',
    '<workflowId | EXPORT_ID> [--watch] [--interval MS]',
    (args, options) => {
      const [target] = atMost(args, 1);
      if (target === undefined)
        throw new UsageError('Name the export: its workflow ID or export ID.');
      const interval = options.interval as string | undefined;
      const intervalMs = interval === undefined ? DEFAULT_WATCH_INTERVAL_MS : Number(interval);
      if (!Number.isInteger(intervalMs) || intervalMs < 100) {
        throw new UsageError('--interval is in milliseconds, 100 or more.');
      }
      const workflowId = target.startsWith(exportWorkflowId(''))
        ? target
        : exportWorkflowId(target);
      return (client) =>
        options.watch === true
          ? watchCommand(client, io, workflowId, intervalMs)
          : progressCommand(client, io, workflowId);
    },
  )
    .summary("show an export's progress bar")
    .description("Shows an export's progress bar; --watch follows it until it ends.")
    .option('-w, --watch', 'follow it until it ends')
    .option(
      '--interval <MS>',
      `milliseconds between polls of --watch (default: ${DEFAULT_WATCH_INTERVAL_MS})`,
    );

  return program;
}

/** Runs one command and resolves to the process exit code; errors are reported on `io.err`. */
export async function main(argv: readonly string[], io: BatchCliIo = processIo()): Promise<number> {
  const parsed = await parseCommandLine<Work>(commandLine(io), argv, io);
  if (parsed.kind === 'help') return EXIT_OK;
  if (parsed.kind === 'usage-error') return EXIT_USAGE;
  return withTemporalClient(io, argv[0]!, parsed.work);
}

function orderId(name: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!/^[1-9]\d{0,14}$/.test(value))
    throw new UsageError(`${name} must be an order ID (1 or more).`);
  return Number(value);
}

/**
 * `1000-5000`, `first-5000`, `first-last`: the same command names the same export, so a `start`
 * run again (after it was killed, or by mistake) finds the export it started instead of a second.
 */
function rangeExportId(fromOrderId: number | undefined, toOrderId: number | undefined): string {
  return `${fromOrderId ?? 'first'}-${toOrderId ?? 'last'}`;
}

async function startCommand(
  client: Client,
  io: BatchCliIo,
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
  if (watch) return watchCommand(client, io, workflowId, DEFAULT_WATCH_INTERVAL_MS);
  io.out(`Progress:    npm run batch -- progress ${workflowId} --watch`);
  return EXIT_OK;
}

/** `start` of an export that exists: says so and shows where it stands, never a second one. */
async function startedBefore(
  client: Client,
  io: BatchCliIo,
  exportId: string,
  workflowId: string,
  watch: boolean,
): Promise<number> {
  const { status, startTime } = await client.workflow.getHandle(workflowId).describe();
  io.out(
    `Export ${exportId} was started before (${workflowId}, at ${startTime.toISOString()}); ` +
      'not starting it again.',
  );
  if (status.name === 'RUNNING') {
    if (watch) return watchCommand(client, io, workflowId, DEFAULT_WATCH_INTERVAL_MS);
    io.out(`Progress:    npm run batch -- progress ${workflowId} --watch`);
    return EXIT_OK;
  }
  io.out('To export again, name a new export: npm run batch -- start --id <EXPORT_ID> …');
  return report(io, workflowId, await exportStatus(client, workflowId));
}

type ExportStatus =
  | { kind: 'running'; progress: ExportProgress }
  | { kind: 'completed'; result: ExportOrdersResult }
  | { kind: 'closed'; status: string; reason: string };

/** Where an export stands: its progress while it runs, its result or failure once it ended. */
async function exportStatus(client: Client, workflowId: string): Promise<ExportStatus> {
  const handle = client.workflow.getHandle<typeof exportOrdersWorkflow>(workflowId);
  const description = await handle.describe();
  const status = description.status.name;
  if (status === 'RUNNING') {
    return { kind: 'running', progress: await handle.query(exportProgressQuery) };
  }
  if (status === 'COMPLETED') return { kind: 'completed', result: await handle.result() };
  const reason = await handle.result().then(
    () => status,
    (err: unknown) => errorMessage((err as { cause?: unknown }).cause ?? err),
  );
  return { kind: 'closed', status, reason };
}

async function progressCommand(client: Client, io: BatchCliIo, workflowId: string) {
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
  io: BatchCliIo,
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

function report(io: BatchCliIo, workflowId: string, status: ExportStatus): number {
  switch (status.kind) {
    case 'running':
      io.out(progressLine(status.progress));
      return EXIT_OK;
    case 'completed': {
      const r = status.result;
      io.out(
        progressLine({
          exportId: r.exportId,
          phase: 'completed',
          total: r.chunks,
          done: r.chunks,
          failedAttempts: r.failedAttempts,
          currentChunk: null,
          totalOrders: r.rows,
          exportedOrders: r.rows,
          run: r.runs,
        }),
      );
      io.out(
        `Export ${r.exportId} completed: ${number(r.rows)} orders in ${number(r.chunks)} chunks.`,
      );
      io.out(`  ${r.file}  (${number(r.bytes)} bytes, sha256 ${r.sha256})`);
      io.out(`  ${r.indexFile}`);
      return EXIT_OK;
    }
    case 'closed':
      io.err(`Export ${workflowId} ended ${status.status}: ${status.reason}`);
      if (status.status === 'FAILED') {
        io.err(`Resume it from the chunk that failed: npm run ops -- retry ${workflowId}`);
      }
      return EXIT_PROBLEM;
  }
}

/**
 * One line: bar, chunks and orders done, failed attempts, what runs now.
 * `[#########---------------------]  30%  30/100 chunks  3,000/10,000 orders  0 failed attempts  chunk 31  run 1`
 */
export function progressLine(p: ExportProgress): string {
  if (p.phase === 'planning') return `[${'-'.repeat(BAR_WIDTH)}]    counting the orders to export…`;
  const ratio = p.total === 0 ? 1 : Math.min(p.done / p.total, 1);
  const filled = Math.round(ratio * BAR_WIDTH);
  const bar = `[${'#'.repeat(filled)}${'-'.repeat(BAR_WIDTH - filled)}]`;
  const percent = `${Math.floor(ratio * 100)}%`.padStart(4);
  const now =
    p.phase === 'finishing'
      ? 'joining the chunks'
      : p.phase === 'completed'
        ? 'completed'
        : p.currentChunk === null
          ? 'between chunks'
          : `chunk ${p.currentChunk}`;
  return [
    `${bar} ${percent}`,
    `${number(p.done)}/${number(p.total)} chunks`,
    `${number(p.exportedOrders)}/${number(p.totalOrders)} orders`,
    `${p.failedAttempts} failed attempt${p.failedAttempts === 1 ? '' : 's'}`,
    now,
    `run ${p.run}`,
  ].join('  ');
}

function number(n: number): string {
  return n.toLocaleString('en-US');
}

function processIo(): BatchCliIo {
  return {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
  };
}

if (require.main === module) {
  runMain(() => main(process.argv.slice(2)), { failureExitCode: EXIT_PROBLEM, stack: true });
}
