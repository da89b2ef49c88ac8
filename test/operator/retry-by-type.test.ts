import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { ActivityInterceptorsFactory } from '@temporalio/worker';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { main } from '../../src/cli/ops';
import { createLoyaltyRepository, createUnmatchedRepository } from '../../src/db';
import { listFailedWorkflows } from '../../src/operator/failed-workflows';
import { findResetPoint } from '../../src/operator/reset-point';
import { resetRequestId } from '../../src/operator/retry';
import { describeLatestRun, runsByWorkflowId } from '../../src/operator/visibility';
import { HEAVY_TASK_QUEUE, shipmentIdempotencyKey } from '../../src/shared/constants';
import { exportWorkflowId, type ExportOrdersInput } from '../../src/shared/export';
import { invoiceWorkflowId } from '../../src/shared/invoice';
import { orderWorkflowId } from '../../src/shared/order';
import { createHeavyWorker } from '../../src/workers/heavy';
import { prebuilt, workflowBundle } from '../support/bundles';
import { heavyTestActivityDeps, runUntilStopped, type RunningWorker } from '../support/workers';
import { createTestOrder } from '../support/orders';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { uniqueEventId } from '../support/webhook';
import {
  captureIo,
  cliEnv,
  eventually,
  type PaymentStack,
  startPaymentStack,
  warehouseRequestsFor,
} from './helpers';

// `ops retry` of each workflow type the inbox lists, end to end on a dev server with the real
// workers: the step that failed is made to give up for good (an injected non-retryable failure,
// switched off before the retry), then the real CLI retries it, and the effects are counted.
// A retry must do the missing work exactly once, or refuse and say what to do instead.
let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;
let stack: PaymentStack;
let heavy: RunningWorker;
let fileDir: string;

/** Activities that give up at once, as a step does when its retry policy ends. */
const failing = new Set<string>();
/** Export chunks that give up at once, and every chunk call made. */
const failingChunks = new Set<number>();
const chunkCalls: number[] = [];

const faults: ActivityInterceptorsFactory = (ctx) => ({
  inbound: {
    async execute(input, next) {
      const type = ctx.info.activityType;
      const chunk = (input.args[0] as { chunk?: number } | undefined)?.chunk;
      if (type === 'exportOrdersChunk' && chunk !== undefined) chunkCalls.push(chunk);
      if (failing.has(type) || (type === 'exportOrdersChunk' && failingChunks.has(chunk!))) {
        throw ApplicationFailure.create({
          type: 'InjectedGiveUp',
          message: `${type} gives up (injected)`,
          nonRetryable: true,
        });
      }
      return next(input);
    },
  },
});

beforeAll(async () => {
  [env, bundle] = await Promise.all([createDevServerEnv(), workflowBundle()]);
  const workerCode = { ...prebuilt(bundle), interceptors: { activity: [faults] } };
  stack = await startPaymentStack(env, { worker: workerCode });
  fileDir = mkdtempSync(path.join(tmpdir(), 'ops-retry-'));
  heavy = runUntilStopped(
    await createHeavyWorker({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      activities: heavyTestActivityDeps(stack.db, {
        invoiceDir: path.join(fileDir, 'invoices'),
        exportDir: path.join(fileDir, 'exports'),
      }),
      overrides: workerCode,
    }),
  );
}, 120_000);

afterAll(async () => {
  await heavy?.stop();
  await stack?.close();
  await env?.teardown();
  if (fileDir) rmSync(fileDir, { recursive: true, force: true });
});

afterEach(() => {
  failing.clear();
  failingChunks.clear();
});

async function ops(...argv: string[]) {
  const io = captureIo({ env: cliEnv(env) });
  const code = await main(argv, io);
  return { code, stdout: io.stdout(), stderr: io.stderr() };
}

/** The failure alerts raised for one workflow ID: one per failed run. */
async function alertsFor(workflowId: string): Promise<number> {
  let count = 0;
  for await (const _ of env.client.workflow.list({
    query: `WorkflowType = 'alertWorkflow' AND WorkflowId STARTS_WITH 'alert-${workflowId}-'`,
  })) {
    count += 1;
  }
  return count;
}

/** What the system did for one order: payments, shipments, mails, points, alerts. */
async function effects(orderId: number, alertsOf: string) {
  const order = await stack.orders.findById(orderId);
  const ledger = await createLoyaltyRepository(stack.db.db).ledgerFor(order!.userId);
  return {
    payments: (await stack.payments.listByOrder(orderId)).length,
    shipments: stack.warehouse.shipments.has(shipmentIdempotencyKey(orderId)) ? 1 : 0,
    mails: stack.smtp.messages.filter((m) => m.messageId?.includes(`<order-${orderId}-`)).length,
    points: ledger.filter((e) => e.orderId === orderId).length,
    alerts: await alertsFor(alertsOf),
  };
}

async function failedRunOf(workflowId: string) {
  await eventually(async () =>
    expect((await listFailedWorkflows(env.client)).map((w) => w.workflowId)).toContain(workflowId),
  );
}

describe('ops retry paymentWorkflow', () => {
  it('hands over a payment whose hand-over gave up after it was recorded: shipped, mailed and awarded once', async () => {
    const order = await createTestOrder(stack.orders);
    const eventId = uniqueEventId('retry-pay');
    failing.add('handOverToOrder');
    const started = await stack.starter.start({ eventId, orderId: order.id, amount: 5400 });
    const payment = env.client.workflow.getHandle(started.workflowId);
    await expect(payment.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    await failedRunOf(started.workflowId);
    await eventually(async () =>
      expect(await effects(order.id, started.workflowId)).toEqual({
        payments: 1,
        shipments: 0,
        mails: 0,
        points: 0,
        alerts: 1,
      }),
    );

    failing.clear();
    const cli = await ops('retry', started.workflowId);
    expect(cli.stderr).toBe('');
    expect(cli.code).toBe(0);
    expect(cli.stdout).toContain(
      're-runs from handOverToOrder (steps run again: recordPayment, handOverToOrder)',
    );
    expect(cli.stdout).toContain('Outcome: the new run completed and did the work.');

    await env.client.workflow.getHandle(orderWorkflowId(order.id)).result();
    expect(await effects(order.id, started.workflowId)).toEqual({
      payments: 1,
      shipments: 1,
      mails: 1,
      points: 1,
      alerts: 1,
    });
    await eventually(async () =>
      expect((await listFailedWorkflows(env.client)).map((w) => w.workflowId)).not.toContain(
        started.workflowId,
      ),
    );
  });

  it('refuses an event recorded with another amount, saying what to do, and changes nothing', async () => {
    const order = await createTestOrder(stack.orders);
    const eventId = uniqueEventId('retry-conflict');
    const first = await stack.starter.start({ eventId, orderId: order.id, amount: 5400 });
    await env.client.workflow.getHandle(first.workflowId).result();
    // The same provider event again, with another amount, under a workflow ID of its own (the
    // server has forgotten the first one's, say): the payment workflow fails with the conflict.
    const conflicting = await env.client.workflow.start('paymentWorkflow', {
      taskQueue: 'payments',
      workflowId: `${first.workflowId}-again`,
      args: [{ eventId, orderId: order.id, amount: 1 }],
    });
    await expect(conflicting.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    const before = await describeLatestRun(env.client, conflicting.workflowId);

    const cli = await ops('retry', conflicting.workflowId);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain('PaymentEventConflict');
    expect(cli.stderr).toContain('Nothing was changed.');
    expect(cli.stderr).toMatch(/Instead: .*npm run ops -- flush/);
    expect((await describeLatestRun(env.client, conflicting.workflowId))?.runId).toBe(
      before?.runId,
    );
  });
  it('keeps a payment whose order does not exist as unmatched, and says the retry paid nothing', async () => {
    const eventId = uniqueEventId('retry-unknown-order');
    const orderId = 987_654;
    failing.add('recordPayment');
    const started = await stack.starter.start({ eventId, orderId, amount: 5400 });
    await expect(env.client.workflow.getHandle(started.workflowId).result()).rejects.toBeInstanceOf(
      WorkflowFailedError,
    );
    await failedRunOf(started.workflowId);

    failing.clear();
    const cli = await ops('retry', started.workflowId);
    const entry = await createUnmatchedRepository(stack.db.db).findByEventId(eventId);
    expect(entry).toMatchObject({ reason: 'unknown_order', deliveryCount: 1, resolution: null });
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain(
      `Outcome: nothing was done: order ${orderId} does not exist: the payment is kept as ` +
        `unmatched entry ${entry!.id} (npm run ops -- unmatched show ${entry!.id})`,
    );
    expect(await stack.payments.countByEventId(eventId)).toBe(0);
  });
});

/**
 * A paid order whose fulfilment fails: the warehouse refuses it (400), or the loyalty points step
 * gives up. Returns once its run is Failed, with the fault switched off again.
 */
async function failedOrder(how: 'warehouse' | 'points') {
  const order = await createTestOrder(stack.orders);
  if (how === 'warehouse') stack.warehouse.setMode({ kind: 'reject', status: 400 }, 1);
  else failing.add('awardLoyaltyPoints');
  const started = await stack.starter.start({
    eventId: uniqueEventId('retry-failed'),
    orderId: order.id,
    amount: 5400,
  });
  await env.client.workflow.getHandle(started.workflowId).result();
  const workflowId = orderWorkflowId(order.id);
  await expect(env.client.workflow.getHandle(workflowId).result()).rejects.toBeInstanceOf(
    WorkflowFailedError,
  );
  failing.clear();
  await failedRunOf(workflowId);
  return { orderId: order.id, workflowId };
}

describe('ops retry orderWorkflow', () => {
  it('re-runs a local step that gave up from its own workflow task: the warehouse is not asked again', async () => {
    const { orderId, workflowId } = await failedOrder('points');
    expect(await effects(orderId, workflowId)).toMatchObject({
      shipments: 1,
      mails: 1,
      points: 0,
    });

    const cli = await ops('retry', workflowId);
    expect(cli).toMatchObject({ code: 0, stderr: '' });
    expect(cli.stdout).toContain(
      're-runs from awardLoyaltyPoints (steps run again: awardLoyaltyPoints)',
    );
    expect(cli.stdout).toContain('Outcome: the new run completed and did the work.');

    expect(await effects(orderId, workflowId)).toEqual({
      payments: 1,
      shipments: 1,
      mails: 1,
      points: 1,
      alerts: 1,
    });
    // What succeeded before the step that failed was kept, not done again.
    expect(warehouseRequestsFor(stack, orderId)).toHaveLength(1);
  });
});

describe('ops retry invoiceWorkflow', () => {
  it('writes the invoice that failed, once', async () => {
    const order = await createTestOrder(stack.orders);
    failing.add('generateInvoicePdf');
    const invoice = await env.client.workflow.start('invoiceWorkflow', {
      taskQueue: HEAVY_TASK_QUEUE,
      workflowId: invoiceWorkflowId(order.id),
      args: [{ orderId: order.id }],
    });
    await expect(invoice.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    await failedRunOf(invoice.workflowId);
    const pdf = path.join(fileDir, 'invoices', `order-${order.id}.pdf`);
    expect(existsSync(pdf)).toBe(false);

    failing.clear();
    const cli = await ops('retry', invoice.workflowId);
    expect(cli).toMatchObject({ code: 0, stderr: '' });
    expect(cli.stdout).toContain('re-runs from generateInvoicePdf');
    expect(existsSync(pdf)).toBe(true);
    expect(await alertsFor(invoice.workflowId)).toBe(1);
  });
});

describe('ops retry exportOrdersWorkflow', () => {
  async function failedExport(input: ExportOrdersInput) {
    const handle = await env.client.workflow.start('exportOrdersWorkflow', {
      taskQueue: HEAVY_TASK_QUEUE,
      workflowId: exportWorkflowId(input.exportId),
      args: [input],
    });
    await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    await failedRunOf(handle.workflowId);
    return handle;
  }

  it('resumes an export from the chunk that failed, the chunks before it kept', async () => {
    const orders = [];
    for (let i = 0; i < 3; i++) orders.push(await createTestOrder(stack.orders));
    const input = {
      exportId: `retry-${orders[0]!.id}`,
      fromOrderId: orders[0]!.id,
      toOrderId: orders[2]!.id,
      chunkSize: 1,
    };
    failingChunks.add(2);
    const handle = await failedExport(input);
    expect(chunkCalls.splice(0)).toEqual([1, 2]);

    failingChunks.clear();
    const cli = await ops('retry', handle.workflowId);
    expect(cli).toMatchObject({ code: 0, stderr: '' });
    expect(cli.stdout).toContain('re-runs from exportOrdersChunk');
    expect(chunkCalls).toEqual([2, 3]);
    await expect(env.client.workflow.getHandle(handle.workflowId).result()).resolves.toMatchObject({
      chunks: 3,
      rows: 3,
    });
  });

  it('refuses an invalid export request, saying to start a corrected one', async () => {
    const handle = await failedExport({ exportId: 'retry-invalid', fromOrderId: 5, toOrderId: 2 });
    const cli = await ops('retry', handle.workflowId);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain('InvalidExportRequest');
    expect(cli.stderr).toContain('Instead: start a corrected export: npm run ops -- batch start');
    const latest = await describeLatestRun(env.client, handle.workflowId);
    expect(latest?.status.name).toBe('FAILED');
  });
});

describe('ops retry all, filtered', () => {
  async function runsOf(workflowId: string): Promise<number> {
    let count = 0;
    for await (const _ of env.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) {
      count += 1;
    }
    return count;
  }

  it('retries only the failures with that root cause since then, shows them first with --dry-run, and resets none twice', async () => {
    const before = await failedOrder('warehouse');
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const since = new Date().toISOString();
    const [first, second] = [await failedOrder('warehouse'), await failedOrder('warehouse')];
    const otherCause = await failedOrder('points');
    const filter = ['--root-cause', 'WarehouseRejected', '--since', since];
    const row = (stdout: string, id: string) =>
      stdout.split('\n').find((l) => l.startsWith(`${id} `));

    const dry = await ops('retry', 'all', ...filter, '--dry-run');
    expect(dry).toMatchObject({ code: 0, stderr: '' });
    for (const o of [first, second]) {
      expect(row(dry.stdout, o.workflowId)).toMatch(/would retry .* would reset run \S+ to event/);
    }
    expect(row(dry.stdout, before.workflowId)).toBeUndefined();
    expect(row(dry.stdout, otherCause.workflowId)).toBeUndefined();
    expect(dry.stdout).toContain('Dry run: would retry 2, skip 0, refuse 0; errors 0.');
    for (const o of [first, second, before, otherCause]) {
      expect((await describeLatestRun(env.client, o.workflowId))?.status.name).toBe('FAILED');
    }

    // Two operators at once, then once more (as after an interruption): each reset happens once.
    const [a, b] = await Promise.all([
      ops('retry', 'all', ...filter),
      ops('retry', 'all', ...filter),
    ]);
    expect([a.code, b.code]).toEqual([0, 0]);
    const again = await ops('retry', 'all', ...filter);
    expect(again.code).toBe(0);
    for (const o of [first, second]) {
      expect(row(again.stdout, o.workflowId)).toMatch(/skipped +latest run is COMPLETED/);
      expect(await runsOf(o.workflowId)).toBe(2);
      expect(warehouseRequestsFor(stack, o.orderId).map((r) => r.status)).toEqual([400, 201]);
      expect(await effects(o.orderId, o.workflowId)).toEqual({
        payments: 1,
        shipments: 1,
        mails: 1,
        points: 1,
        alerts: 1,
      });
    }
    for (const o of [before, otherCause]) {
      expect((await describeLatestRun(env.client, o.workflowId))?.status.name).toBe('FAILED');
    }

    // What makes a reset happen once even when its answer is lost or two operators race: the
    // server answers a reset of the same failed run with the run that reset made.
    const failedRunId = (await runsByWorkflowId(env.client, 'Failed')).get(first.workflowId)![0]!;
    const history = await env.client.workflow
      .getHandle(first.workflowId, failedRunId)
      .fetchHistory();
    const repeated = await env.client.workflowService.resetWorkflowExecution({
      namespace: env.namespace ?? 'default',
      workflowExecution: { workflowId: first.workflowId, runId: failedRunId },
      workflowTaskFinishEventId: findResetPoint(history.events ?? [])!.eventId,
      reason: 'test',
      requestId: resetRequestId(failedRunId),
    });
    expect(repeated.runId).toBe((await describeLatestRun(env.client, first.workflowId))?.runId);
    expect(await runsOf(first.workflowId)).toBe(2);
  });
});
