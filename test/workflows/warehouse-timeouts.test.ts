import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { durationToMs } from '../support/durations';
import { createActivities } from '../../src/activities';
import { createOrdersRepository, type DatabaseHandle } from '../../src/db';
import { orderWorkflowId } from '../../src/shared/order';
import { RetryBudgets } from '../../src/shared/retry-budget';
import type { orderWorkflow } from '../../src/workflows/order';
import { createWarehouseSimulator, type WarehouseSimulator } from '../../src/warehouse/simulator';
import { testDatabases } from '../support/databases';
import { createTimeSkippingEnv } from '../support/temporal';
import { testActivityDeps } from '../support/activity-deps';
import { startSmtpSink, type SmtpSink } from '../../src/mail/smtp-sink';

// Timeouts with the real activities: a hung warehouse call is abandoned and retried, and the
// late original, when it finally reaches the warehouse, cannot create a second shipment.
let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;
let warehouse: WarehouseSimulator;
let warehouseUrl: string;
let smtp: SmtpSink;
let db: DatabaseHandle;

const quietLogger = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

beforeAll(async () => {
  env = await createTimeSkippingEnv();
  bundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../src/workflows'),
    workflowInterceptorModules: [require.resolve('../../src/workflows/interceptors')],
    logger: quietLogger,
  });
  warehouse = createWarehouseSimulator();
  warehouseUrl = await warehouse.listen(0);
  smtp = await startSmtpSink();
  db = await testDatabases[0]!.create();
});

afterAll(async () => {
  await db?.close();
  await smtp?.close();
  await warehouse?.close();
  await env?.teardown();
});

async function payOnce(warehouseTimeoutMs: number) {
  const orders = createOrdersRepository(db.db);
  const { order } = await orders.createWithIdempotencyKey({
    userId: 1,
    customerEmail: 'a@example.com',
    totalAmount: 100,
  });
  const taskQueue = `test-${randomUUID()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: bundle,
    activities: createActivities({
      ...testActivityDeps(db, { warehouseUrl, smtpUrl: smtp.url, warehouseTimeoutMs }),
      client: env.client,
    }),
  });
  const workflowId = `payment-${randomUUID()}`;
  const result = await worker.runUntil(async () => {
    await env.client.workflow.execute('paymentWorkflow', {
      workflowId,
      taskQueue,
      args: [{ eventId: workflowId, orderId: order.id, amount: 100 }],
      workflowExecutionTimeout: '1 hour',
    });
    return env.client.workflow.getHandle<typeof orderWorkflow>(orderWorkflowId(order.id)).result();
  });
  return { orderId: order.id, result, orderWorkflow: orderWorkflowId(order.id) };
}

describe('warehouse call timeouts', () => {
  it('abandons a hung call, retries it, and the late original creates no second shipment', async () => {
    warehouse.reset();
    // The first request hangs for 1.5 s; the client gives up after 300 ms.
    warehouse.setMode({ kind: 'slow', delayMs: 1_500 }, 1);

    const { orderId, result } = await payOnce(300);
    expect(result).toMatchObject({ processed: [{ outcome: 'fulfilled' }] });

    // Let the late original reach the warehouse's idempotency check.
    await waitFor(() => warehouse.requests.length === 2);
    expect(warehouse.requests.map((r) => r.status).sort()).toEqual([200, 201]);
    expect([...warehouse.shipments.values()].filter((s) => s.orderId === orderId)).toHaveLength(1);
    expect((await createOrdersRepository(db.db).findById(orderId))?.shipmentStatus).toBe(
      'requested',
    );
  });

  it('gives every activity a start-to-close timeout, the warehouse call one shorter than its first backoff and a heartbeat timeout', async () => {
    warehouse.reset();
    const { orderWorkflow } = await payOnce(1_000);
    const history = await env.client.workflow.getHandle(orderWorkflow).fetchHistory();
    const scheduled = (history.events ?? []).flatMap((e) =>
      e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes] : [],
    );
    expect(scheduled.map((a) => a.activityType?.name)).toEqual([
      'notifyWarehouse',
      'setShipmentStatus',
      'sendOrderConfirmation',
      'awardLoyaltyPoints',
    ]);
    for (const activity of scheduled) {
      expect(durationToMs(activity.startToCloseTimeout)).toBeGreaterThan(0);
      expect(durationToMs(activity.startToCloseTimeout)).toBeLessThanOrEqual(15_000);
    }
    const notify = scheduled[0]!;
    expect(durationToMs(notify.startToCloseTimeout)).toBeLessThan(
      RetryBudgets.warehouseNotification.backoffMs[0],
    );
    expect(durationToMs(notify.heartbeatTimeout)).toBeGreaterThan(0);
    expect(notify.retryPolicy?.maximumAttempts).toBe(1);
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
