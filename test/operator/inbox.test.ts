import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { main } from '../../src/cli/ops';
import { listFailedWorkflows } from '../../src/operator/failed-workflows';
import { retryFailedWorkflow, RetryRefusedError } from '../../src/operator/retry';
import { describeLatestRun, runsByWorkflowId } from '../../src/operator/visibility';
import { shipmentIdempotencyKey } from '../../src/shared/constants';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import {
  captureIo,
  cliEnv,
  completedPayment,
  eventually,
  failedPayment,
  FULFILMENT_WORKFLOW_TYPE,
  type PaymentStack,
  type StartedPayment,
  startPaymentStack,
  warehouseRequestsFor,
} from './helpers';

// The operator inbox against the real payment flow on a dev server: the seed's queue:failed,
// queue:retry and queue:flush. A payment whose order the warehouse refuses to ship ends with its
// fulfilment workflow Failed. Tests share one namespace, so each asserts about its own workflows
// only (a `retry all` or `flush` also touches what earlier tests left).
let env: TestWorkflowEnvironment;
let stack: PaymentStack;

beforeAll(async () => {
  // Closed workflows deleted within seconds: every second keeps the flush test short, and
  // deletion stays asynchronous, as on any server.
  env = await createDevServerEnv({ fastDeletion: true });
  stack = await startPaymentStack(env);
});

afterAll(async () => {
  await stack?.close();
  await env?.teardown();
});

const failedIds = async () =>
  (await listFailedWorkflows(env.client, { workflowType: FULFILMENT_WORKFLOW_TYPE })).map(
    (w) => w.workflowId,
  );

/** Waits until `ops failed` would list the payment: visibility is eventually consistent. */
async function listedAsFailed(payment: StartedPayment) {
  await eventually(async () => expect(await failedIds()).toContain(payment.workflowId));
}

async function ops(...argv: string[]) {
  const io = captureIo({ env: cliEnv(env) });
  const code = await main(argv, io);
  return { code, stdout: io.stdout(), stderr: io.stderr() };
}

describe('ops failed', () => {
  it('lists a failed payment with its order ID and failure, and not a completed one', async () => {
    const failed = await failedPayment(env, stack);
    const completed = await completedPayment(env, stack);
    await listedAsFailed(failed);

    const listed = await listFailedWorkflows(env.client);
    const entry = listed.find((w) => w.workflowId === failed.workflowId);
    expect(entry).toMatchObject({
      type: FULFILMENT_WORKFLOW_TYPE,
      orderId: String(failed.orderId),
      failure: { rootCause: { type: 'WarehouseRejected' } },
    });
    expect(entry?.failedAt).toBeInstanceOf(Date);
    expect(listed.map((w) => w.workflowId)).not.toContain(completed.workflowId);

    const cli = await ops('failed', '--type', FULFILMENT_WORKFLOW_TYPE);
    expect(cli.code).toBe(0);
    const line = cli.stdout.split('\n').find((l) => l.startsWith(failed.workflowId));
    expect(line).toContain(` ${failed.orderId} `);
    expect(line).toContain('WarehouseRejected: warehouse rejected the shipment request with 400');
    expect(cli.stdout).not.toContain(completed.workflowId);
  });
});

describe('ops retry <workflowId>', () => {
  it('re-runs a failed payment from the warehouse step: shipped once, one payment row, no longer failed', async () => {
    const payment = await failedPayment(env, stack);
    await listedAsFailed(payment);
    expect(await stack.orders.findById(payment.orderId)).toMatchObject({
      shipmentStatus: 'failed',
    });

    const cli = await ops('retry', payment.workflowId);
    expect(cli).toMatchObject({ code: 0, stderr: '' });
    const newRunId = /New run: (\S+)/.exec(cli.stdout)?.[1];
    expect(newRunId).toBeDefined();
    expect(cli.stdout).toContain('re-runs from notifyWarehouse');

    // The new run keeps the payment event it was handed and notifies the warehouse again; a
    // fresh start would have no event to fulfil.
    const result = await env.client.workflow.getHandle(payment.workflowId, newRunId).result();
    expect(result).toMatchObject({
      processed: [{ eventId: payment.eventId, outcome: 'fulfilled' }],
    });
    expect(stack.warehouse.shipments.get(shipmentIdempotencyKey(payment.orderId))).toMatchObject({
      orderId: payment.orderId,
    });
    expect(warehouseRequestsFor(stack, payment.orderId).map((r) => r.status)).toEqual([400, 201]);
    expect(await stack.payments.listByOrder(payment.orderId)).toHaveLength(1);
    expect(await stack.orders.findById(payment.orderId)).toMatchObject({
      shipmentStatus: 'requested',
    });

    // Same workflow ID, new run; the old Failed run is still in visibility but not in the inbox.
    const latest = await describeLatestRun(env.client, payment.workflowId);
    expect(latest).toMatchObject({ runId: newRunId, status: { name: 'COMPLETED' } });
    expect(await failedIds()).not.toContain(payment.workflowId);
    const failedRuns = await runsByWorkflowId(env.client, 'Failed', FULFILMENT_WORKFLOW_TYPE);
    expect(failedRuns.get(payment.workflowId)).toHaveLength(1);
  });

  it('refuses a completed workflow and runs nothing', async () => {
    const payment = await completedPayment(env, stack);
    const before = await describeLatestRun(env.client, payment.workflowId);
    const requestsBefore = warehouseRequestsFor(stack, payment.orderId).length;

    const cli = await ops('retry', payment.workflowId);
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain(`${payment.workflowId}: its latest run is COMPLETED`);
    await expect(
      retryFailedWorkflow(env.client, payment.workflowId, { reason: 'test' }),
    ).rejects.toBeInstanceOf(RetryRefusedError);

    const after = await describeLatestRun(env.client, payment.workflowId);
    expect(after?.runId).toBe(before?.runId);
    expect(after?.status.name).toBe('COMPLETED');
    // The payment workflow that fed it is refused the same way.
    expect((await ops('retry', payment.paymentWorkflowId)).code).toBe(1);
    expect(warehouseRequestsFor(stack, payment.orderId)).toHaveLength(requestsBefore);
    expect(await stack.payments.listByOrder(payment.orderId)).toHaveLength(1);
  });

  it('refuses a workflow ID the server does not know', async () => {
    const cli = await ops('retry', 'payment-no-such-event');
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain('payment-no-such-event: no such workflow');
    expect(cli.stderr).not.toContain('order-');
  });

  it("names the order's workflow when given an order's number", async () => {
    const cli = await ops('retry', '12');
    expect(cli.code).toBe(1);
    expect(cli.stderr).toContain("12: no such workflow (order 12's workflow is order-12)");
  });
});

describe('ops retry all', () => {
  it('retries every failed payment and skips one whose latest run completed', async () => {
    const first = await failedPayment(env, stack);
    const second = await failedPayment(env, stack);
    // Failed once, retried and completed since: its old Failed run is still in visibility.
    const recovered = await failedPayment(env, stack);
    await listedAsFailed(recovered);
    const { newRunId } = await retryFailedWorkflow(env.client, recovered.workflowId, {
      reason: 'test',
    });
    await env.client.workflow.getHandle(recovered.workflowId, newRunId).result();
    await listedAsFailed(first);
    await listedAsFailed(second);

    const cli = await ops('retry', 'all', '--type', FULFILMENT_WORKFLOW_TYPE);
    expect(cli).toMatchObject({ code: 0, stderr: '' });
    const row = (id: string) => cli.stdout.split('\n').find((l) => l.startsWith(`${id} `));
    expect(row(first.workflowId)).toMatch(/ done +new run \S+: the new run completed/);
    expect(row(second.workflowId)).toMatch(/ done +new run \S+: the new run completed/);
    expect(row(recovered.workflowId)).toMatch(/ skipped +latest run is COMPLETED/);

    for (const payment of [first, second]) {
      await eventually(async () =>
        expect(await describeLatestRun(env.client, payment.workflowId)).toMatchObject({
          status: { name: 'COMPLETED' },
        }),
      );
      expect(stack.warehouse.shipments.has(shipmentIdempotencyKey(payment.orderId))).toBe(true);
      expect(await stack.payments.listByOrder(payment.orderId)).toHaveLength(1);
    }
    // The skipped one was not touched: still the run the first retry made.
    expect((await describeLatestRun(env.client, recovered.workflowId))?.runId).toBe(newRunId);
    expect(warehouseRequestsFor(stack, recovered.orderId)).toHaveLength(2);
  });
});

describe('ops flush', () => {
  it('deletes failed workflows after confirmation and leaves completed ones', async () => {
    const failed = await failedPayment(env, stack);
    const completed = await completedPayment(env, stack);
    await listedAsFailed(failed);

    // Answering anything but "yes" deletes nothing.
    const declined = captureIo({
      env: cliEnv(env),
      interactive: true,
      ask: () => Promise.resolve('no'),
    });
    expect(await main(['flush'], declined)).toBe(1);
    expect(declined.stderr()).toContain('Nothing deleted.');
    expect(await failedIds()).toContain(failed.workflowId);

    const cli = await ops('flush', '--yes');
    expect(cli.code).toBe(0);
    expect(cli.stdout).toMatch(/Deleted [1-9]\d* failed workflow\(s\)\./);

    // The command waits until the server has deleted them (it does so in the background).
    expect(await describeLatestRun(env.client, failed.workflowId)).toBeUndefined();
    await eventually(async () => {
      const visible = await runsByWorkflowId(env.client, 'Failed');
      expect(visible.has(failed.workflowId)).toBe(false);
    });
    await eventually(async () => expect(await failedIds()).toEqual([]));
    expect(await describeLatestRun(env.client, completed.workflowId)).toMatchObject({
      status: { name: 'COMPLETED' },
    });
  });
});
