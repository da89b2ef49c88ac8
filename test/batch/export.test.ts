import { createHash, randomUUID } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Context } from '@temporalio/activity';
import { WorkflowFailedError } from '@temporalio/client';
import type { History } from '@temporalio/common/lib/proto-utils';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { ExportOrdersChunkInput } from '../../src/activities/batch-activities';
import { createHeavyActivities } from '../../src/activities/heavy';
import { type CliIo, main as ops } from '../../src/cli/ops';
import type { DatabaseHandle } from '../../src/db';
import { createHeavyWorker } from '../../src/workers/heavy';
import { HEAVY_TASK_QUEUE } from '../../src/shared/constants';
import { FailureType } from '../../src/shared/errors';
import {
  EXPORT_COLUMNS,
  exportProgressQuery,
  exportWorkflowId,
  type ExportIndexChunk,
  type ExportOrdersResult,
  type ExportProgress,
} from '../../src/shared/export';
import { exportOrdersWorkflow } from '../../src/workflows/batch';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { prebuilt, workflowBundle } from '../support/bundles';
import { heavyTestActivityDeps, runUntilStopped, type RunningWorker } from '../support/workers';

// The order export: a large set in chunks of 100, one activity per chunk, on a real dev server
// with the real heavy worker. A chunk that fails twice is retried alone, progress is queryable
// mid-way, and the history stays bounded by continue-as-new.

let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  [env, bundle] = await Promise.all([createDevServerEnv(), workflowBundle()]);
}, 120_000);
afterAll(async () => {
  await env?.teardown();
});

interface Case {
  name: 'sqlite' | 'postgres';
  orders: number;
  /** Fails twice, then succeeds. */
  failingChunk: number;
  chunksPerRun?: number;
  /** Start through the CLI (task queue `heavy`) or the client (a queue of its own). */
  viaCli: boolean;
}

// 10,000 orders on SQLite (100 chunks, 2 runs); a smaller set on PostgreSQL with a run every
// 5 chunks, so it continues as new twice.
const cases: Case[] = [
  { name: 'sqlite', orders: 10_000, failingChunk: 37, viaCli: true },
  { name: 'postgres', orders: 1_234, failingChunk: 7, chunksPerRun: 5, viaCli: false },
];

describe.each(cases)('exportOrdersWorkflow ($name, $orders orders)', (c) => {
  const database = testDatabases.find((d) => d.name === c.name)!;
  const expectedChunks = Math.ceil(c.orders / 100);
  const taskQueue = c.viaCli ? HEAVY_TASK_QUEUE : `heavy-${randomUUID()}`;
  let db: TestDatabaseHandle;
  let exportDir: string;
  let worker: RunningWorker;
  /** Every call of exportOrdersChunk, by chunk number, attempts included. */
  const chunkCalls: number[] = [];

  beforeAll(async () => {
    db = await database.create();
    exportDir = mkdtempSync(path.join(tmpdir(), 'exports-'));
    await seedOrders(db, c.orders);
    const deps = heavyTestActivityDeps(db, {
      invoiceDir: path.join(exportDir, 'invoices'),
      exportDir,
    });
    const real = createHeavyActivities({ ...deps, client: env.client });
    worker = runUntilStopped(
      await createHeavyWorker({
        connection: env.nativeConnection,
        namespace: env.namespace ?? 'default',
        taskQueue,
        activities: deps,
        overrides: {
          ...prebuilt(bundle),
          activities: {
            ...real,
            // The injected fault: one chunk fails on its first two attempts.
            async exportOrdersChunk(input: ExportOrdersChunkInput) {
              chunkCalls.push(input.chunk);
              if (input.chunk === c.failingChunk && Context.current().info.attempt <= 2) {
                throw ApplicationFailure.create({
                  type: 'InjectedFailure',
                  message: `chunk ${input.chunk} fails on purpose`,
                });
              }
              return real.exportOrdersChunk(input);
            },
          },
        },
      }),
    );
  }, 60_000);

  afterAll(async () => {
    await worker?.stop();
    await db?.close();
    if (exportDir) rmSync(exportDir, { recursive: true, force: true });
  });

  it(`exports every order in chunks of 100, retries a failing chunk alone, shows progress and stays bounded`, async () => {
    const exportId = `test-${c.name}-${Date.now()}`;
    const workflowId = exportWorkflowId(exportId);
    const cli = cliIo();
    if (c.viaCli) {
      expect(await ops(['batch', 'start', '--id', exportId], cli.io)).toBe(0);
      expect(cli.stdout()).toContain(`Workflow ID: ${workflowId}`);
    } else {
      await env.client.workflow.start(exportOrdersWorkflow, {
        workflowId,
        taskQueue,
        args: [{ exportId, chunksPerRun: c.chunksPerRun }],
        workflowExecutionTimeout: '5 minutes',
      });
    }
    const handle = env.client.workflow.getHandle<typeof exportOrdersWorkflow>(workflowId);

    // Mid-way: some chunks done, not all.
    const midway = await pollUntil(async () => {
      const p = await handle.query(exportProgressQuery).catch(() => undefined);
      return p && p.done >= 3 && p.done < p.total ? p : undefined;
    });
    expect(midway).toMatchObject<Partial<ExportProgress>>({
      exportId,
      phase: 'exporting',
      total: expectedChunks,
      totalOrders: c.orders,
    });
    expect(midway.done).toBeLessThan(midway.total);
    expect(midway.exportedOrders).toBe(midway.done * 100);

    if (c.viaCli) {
      // The progress bar, once mid-way, then followed to the end.
      const once = cliIo();
      expect(await ops(['batch', 'progress', workflowId], once.io)).toBe(0);
      expect(once.stdout()).toMatch(/^\[#*-+\] +\d+% +\d+\/100 chunks {2}[\d,]+\/10,000 orders/);
      const watch = cliIo();
      expect(
        await ops(['batch', 'progress', exportId, '--watch', '--interval', '100'], watch.io),
      ).toBe(0);
      const lines = watch.stdout().split('\n');
      expect(lines.filter((l) => /^\[[#-]{30}\]/.test(l)).length).toBeGreaterThanOrEqual(2);
      expect(watch.stdout()).toContain(`[${'#'.repeat(30)}] 100%  100/100 chunks`);
      expect(watch.stdout()).toContain(
        `Export ${exportId} completed: 10,000 orders in 100 chunks.`,
      );
    }

    const result: ExportOrdersResult = await handle.result();
    expect(result).toMatchObject({
      exportId,
      rows: c.orders,
      chunks: expectedChunks,
      failedAttempts: 2,
    });

    // The failing chunk was retried on its own; every other chunk ran once.
    const calls = countBy(chunkCalls);
    expect(calls.size).toBe(expectedChunks);
    for (const [chunk, count] of calls) expect(count).toBe(chunk === c.failingChunk ? 3 : 1);

    // The files: one chunk file per 100 orders, and the joined CSV with every order once.
    const dir = path.join(exportDir, exportId);
    const chunkFiles = readdirSync(dir).filter((f) => f.startsWith('chunk-'));
    expect(chunkFiles).toHaveLength(expectedChunks);
    chunkFiles.forEach((file, i) => {
      const rows = parseCsv(readFileSync(path.join(dir, file), 'utf8'));
      expect(rows).toHaveLength(i < expectedChunks - 1 ? 100 : c.orders - 100 * i);
    });
    const csv = readFileSync(result.file);
    expect(createHash('sha256').update(csv).digest('hex')).toBe(result.sha256);
    const [header, ...records] = parseCsv(csv.toString('utf8'));
    expect(header).toEqual([...EXPORT_COLUMNS]);
    expect(records).toHaveLength(c.orders);
    expect(records.map((r) => Number(r[0]))).toEqual(
      Array.from({ length: c.orders }, (_, i) => i + 1),
    );
    // Quotes and commas survive; a formula a customer typed is defused.
    expect(records[0]![2]).toBe('"Tricky, Name"@example.com');
    expect(records[1]![2]).toBe('\'=HYPERLINK("http://x")@example.com');
    expect(records[2]).toEqual([
      '3',
      '3',
      'buyer3@example.com',
      'paid',
      '300',
      'requested',
      '2026-01-01T00:00:00.000Z',
      '',
      '2026-01-01T00:00:00.000Z',
      '2026-01-01T00:00:00.000Z',
    ]);
    const index = JSON.parse(readFileSync(result.indexFile, 'utf8')) as {
      rows: number;
      sha256: string;
      chunks: ExportIndexChunk[];
    };
    expect(index.rows).toBe(c.orders);
    expect(index.sha256).toBe(result.sha256);
    expect(index.chunks).toHaveLength(expectedChunks);
    expect(index.chunks[1]).toEqual({
      chunk: 2,
      file: 'chunk-00002.csv',
      rows: 100,
      firstOrderId: 101,
      lastOrderId: 200,
    });

    // Continue-as-new: several runs, each with a bounded history.
    const runs = await historyLengthsOfRuns(workflowId);
    const chunksPerRun = c.chunksPerRun ?? 50;
    expect(runs.length).toBe(Math.ceil(expectedChunks / chunksPerRun));
    expect(result.runs).toBe(runs.length);
    // About 6 events per chunk (activity scheduled/started/completed, workflow task
    // scheduled/started/completed), plus the start, the plan, the join and the close.
    for (const length of runs) expect(length).toBeLessThan(chunksPerRun * 7 + 30);
    process.stderr.write(
      `${c.name}: ${c.orders} orders, ${expectedChunks} chunks, history lengths per run: ${runs.join(', ')}\n`,
    );
  });

  it('exports an empty range as a header-only file', async () => {
    const exportId = `empty-${c.name}-${Date.now()}`;
    const result = await env.client.workflow.execute(exportOrdersWorkflow, {
      workflowId: exportWorkflowId(exportId),
      taskQueue,
      args: [{ exportId, fromOrderId: c.orders + 1 }],
      workflowExecutionTimeout: '1 minute',
    });

    expect(result).toMatchObject({ rows: 0, chunks: 0, failedAttempts: 0, runs: 1 });
    expect(readFileSync(result.file, 'utf8')).toBe(`${EXPORT_COLUMNS.join(',')}\r\n`);
  });

  it('refuses an export ID that is not a plain name, without retrying', async () => {
    const failure = await env.client.workflow
      .execute(exportOrdersWorkflow, {
        workflowId: `bad-export-${randomUUID()}`,
        taskQueue,
        args: [{ exportId: '../outside' }],
        workflowExecutionTimeout: '1 minute',
      })
      .catch((err: unknown) => err);

    expect(failure).toBeInstanceOf(WorkflowFailedError);
    expect((failure as WorkflowFailedError).cause).toMatchObject({
      type: FailureType.InvalidExportRequest,
    });
  });
});

/** One multi-row insert per 1,000 orders: 10,000 orders in a fraction of a second. */
async function seedOrders(db: DatabaseHandle, count: number): Promise<void> {
  const at = '2026-01-01T00:00:00.000Z';
  for (let start = 1; start <= count; start += 1_000) {
    const rows = [];
    for (let id = start; id < Math.min(start + 1_000, count + 1); id++) {
      const email =
        id === 1
          ? '"Tricky, Name"@example.com'
          : id === 2
            ? '=HYPERLINK("http://x")@example.com'
            : `buyer${id}@example.com`;
      rows.push({
        user_id: id,
        customer_email: email,
        status: id % 2 === 1 ? ('paid' as const) : ('pending' as const),
        total_amount: id * 100,
        shipment_status: id % 2 === 1 ? ('requested' as const) : null,
        confirmation_sent_at: id % 2 === 1 ? at : null,
        idempotency_key: null,
        idempotency_fingerprint: null,
        created_at: at,
        updated_at: at,
      });
    }
    await db.db.insertInto('orders').values(rows).execute();
  }
}

/** History length of every run of a workflow, oldest first (walking back continue-as-new). */
async function historyLengthsOfRuns(workflowId: string): Promise<number[]> {
  const lengths: number[] = [];
  let runId: string | undefined = (await env.client.workflow.getHandle(workflowId).describe())
    .runId;
  while (runId) {
    const history: History = await env.client.workflow.getHandle(workflowId, runId).fetchHistory();
    const events = history.events ?? [];
    lengths.unshift(events.length);
    runId =
      events[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId || undefined;
  }
  return lengths;
}

function cliIo() {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = {
    out: (text) => out.push(text),
    err: (text) => err.push(text),
    env: { TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace ?? 'default' },
  };
  return { io, stdout: () => out.join('\n'), stderr: () => err.join('\n') };
}

async function pollUntil<T>(check: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 25));
  }
}

function countBy(values: number[]): Map<number, number> {
  const counts = new Map<number, number>();
  for (const v of values) counts.set(v, (counts.get(v) ?? 0) + 1);
  return counts;
}

/** RFC 4180 records (CRLF line ends), written here independently of the exporter. */
function parseCsv(text: string): string[][] {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]!;
    if (quoted) {
      if (ch !== '"') field += ch;
      else if (text[i + 1] === '"') {
        field += '"';
        i++;
      } else quoted = false;
    } else if (ch === '"') quoted = true;
    else if (ch === ',') {
      record.push(field);
      field = '';
    } else if (ch === '\r' && text[i + 1] === '\n') {
      record.push(field);
      records.push(record);
      record = [];
      field = '';
      i++;
    } else field += ch;
  }
  return records;
}
