import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities } from '../../src/activities';
import {
  createOrderExportRepository,
  createOrdersRepository,
  createPartnerPausesRepository,
  createPaymentsRepository,
  createStockRepository,
  type DatabaseHandle,
} from '../../src/db';
import { returnReviewAlertWorkflowId } from '../../src/shared/alert';
import { FailureType } from '../../src/shared/errors';
import { paymentWorkflowId } from '../../src/shared/constants';
import { orderWorkflowId } from '../../src/shared/order';
import { refundWorkflowId } from '../../src/shared/payment-events';
import { partnerPauseChangedSignal } from '../../src/shared/partner';
import { PartnerPausedSearchAttribute } from '../../src/shared/search-attributes';
import type { orderWorkflow } from '../../src/workflows/order';
import { createHeavyWorker } from '../../src/workers/heavy';
import { testActivityDeps } from '../../harness/activity-deps';
import { prebuilt, workflowBundle } from '../support/bundles';
import { testDatabases } from '../../harness/databases';
import { until } from '../support/eventually';
import { createTestOrder } from '../support/orders';
import { startPartners, type Partners } from '../support/stack';
import { createTimeSkippingEnv } from '../../harness/temporal/test-env';

// The partner pause against the real activities, database and warehouse simulator, on the
// time-skipping server: a warehouse outage held for two hours of skipped time ends with every
// order shipped once, none compensated, no call to the warehouse while paused.
let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;
let partners: Partners;
let db: DatabaseHandle;
let heavy: Worker;
let heavyRun: Promise<void>;
let fileDir: string;

beforeAll(async () => {
  env = await createTimeSkippingEnv();
  bundle = await workflowBundle();
  partners = await startPartners();
  db = await testDatabases[0]!.create();
  // A fulfilled order starts its invoice on task queue `heavy`. The time-skipping server skips no
  // time while any workflow task waits for a worker, so without this one every env.sleep after
  // a fulfilment hangs (the invoice's first task is never taken).
  fileDir = mkdtempSync(path.join(tmpdir(), 'partner-pause-'));
  heavy = await createHeavyWorker({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    activities: {
      orders: createOrdersRepository(db.db),
      payments: createPaymentsRepository(db.db),
      orderExport: createOrderExportRepository(db.db),
      invoiceDir: path.join(fileDir, 'invoices'),
      exportDir: path.join(fileDir, 'exports'),
      stock: createStockRepository(db.db),
      alerts: { alertWebhookUrl: undefined, temporalUiUrl: undefined },
    },
    overrides: prebuilt(bundle),
  });
  heavyRun = heavy.run();
});

afterAll(async () => {
  if (heavy?.getState() === 'RUNNING') heavy.shutdown();
  await heavyRun;
  await db?.close();
  await partners?.close();
  await env?.teardown();
  if (fileDir) rmSync(fileDir, { recursive: true, force: true });
});

async function worker(taskQueue: string) {
  return Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: bundle,
    activities: createActivities({ ...testActivityDeps(db, partners), client: env.client }),
  });
}

/** How each warehouse call of the order run ended: completed, or its failure type. */
async function warehouseCalls(orderId: number) {
  const history = await env.client.workflow.getHandle(orderWorkflowId(orderId)).fetchHistory();
  const events = history.events ?? [];
  const scheduled = events.filter(
    (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'notifyWarehouse',
  );
  return scheduled.map((s) => {
    const id = s.eventId?.toString();
    const end = events.find(
      (e) =>
        e.activityTaskCompletedEventAttributes?.scheduledEventId?.toString() === id ||
        e.activityTaskFailedEventAttributes?.scheduledEventId?.toString() === id,
    );
    if (end?.activityTaskCompletedEventAttributes) return 'completed';
    return end?.activityTaskFailedEventAttributes?.failure?.applicationFailureInfo?.type;
  });
}

/** The timers a run started: a held run's re-checks of the pause (and nothing else here). */
async function timersStarted(workflowId: string): Promise<number> {
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? []).filter((e) => e.timerStartedEventAttributes).length;
}

describe('partner pause', () => {
  it('holds a failing warehouse for two hours: nothing compensated, nothing called, all shipped once after the resume', async () => {
    const pauses = createPartnerPausesRepository(db.db);
    const orders = createOrdersRepository(db.db);
    partners.warehouse.reset();
    partners.warehouse.setMode({ kind: 'unavailable', status: 503 });
    const taskQueue = `test-${randomUUID()}`;
    const w = await worker(taskQueue);
    const paid = await Promise.all(
      [1, 2, 3].map(() => createTestOrder(orders, { totalAmount: 100 })),
    );
    await w.runUntil(async () => {
      for (const order of paid) {
        const eventId = `pause-${randomUUID()}`;
        await env.client.workflow.start('paymentWorkflow', {
          workflowId: paymentWorkflowId(eventId),
          taskQueue,
          args: [{ eventId, orderId: order.id, amount: 100 }],
          workflowExecutionTimeout: '1 day',
        });
      }
      // Each order's first attempt meets the outage; then the operator pauses the warehouse.
      await until(() => partners.warehouse.requests.length >= 3, 'three first attempts', {
        intervalMs: 20,
      });
      expect((await pauses.pause('warehouse', 'ops-test', 'warehouse outage')).kind).toBe('paused');
      const calledBeforePause = partners.warehouse.requests.length;

      // Two hours: four times the warehouse call's 30-minute deadline.
      await env.sleep('2 hours');
      expect(partners.warehouse.requests.length).toBe(calledBeforePause);
      for (const order of paid) {
        const handle = env.client.workflow.getHandle(orderWorkflowId(order.id));
        const description = await handle.describe();
        expect(description.status.name).toBe('RUNNING');
        expect(description.typedSearchAttributes.get(PartnerPausedSearchAttribute)).toBe(
          'warehouse',
        );
        expect((await orders.findById(order.id))?.shipmentStatus).toBeNull();
        // Waiting on the resume, not polling: re-checks after 1, 2, 4… minutes, at most an
        // hour apart, so 7 timers in two hours, where a re-check a minute took 120.
        expect(await timersStarted(orderWorkflowId(order.id))).toBe(7);
      }

      partners.warehouse.setMode({ kind: 'ok' });
      expect((await pauses.resume('warehouse')).kind).toBe('resumed');
      // What `ops partner resume` does after the table: it wakes each held run at once.
      for (const order of paid) {
        await env.client.workflow
          .getHandle(orderWorkflowId(order.id))
          .signal(partnerPauseChangedSignal);
      }
      for (const order of paid) {
        const result = await env.client.workflow
          .getHandle<typeof orderWorkflow>(orderWorkflowId(order.id))
          .result();
        expect(result.processed).toEqual([expect.objectContaining({ outcome: 'fulfilled' })]);
      }
    });

    for (const order of paid) {
      expect((await orders.findById(order.id))?.shipmentStatus).toBe('requested');
      expect(
        [...partners.warehouse.shipments.values()].filter((s) => s.orderId === order.id),
      ).toHaveLength(1);
      // The call held was ended by the pause, not by its budget; the one after the resume is new.
      expect(await warehouseCalls(order.id)).toEqual([FailureType.PartnerPaused, 'completed']);
      const description = await env.client.workflow.getHandle(orderWorkflowId(order.id)).describe();
      expect(description.typedSearchAttributes.get(PartnerPausedSearchAttribute)).toBeUndefined();
      // Woken by the signal: no re-check ran after the resume.
      expect(await timersStarted(orderWorkflowId(order.id))).toBe(7);
    }
  });

  it("holds a refund's shipment cancel too: cancelled once after the resume, no return review", async () => {
    const pauses = createPartnerPausesRepository(db.db);
    const orders = createOrdersRepository(db.db);
    partners.warehouse.reset();
    const taskQueue = `test-${randomUUID()}`;
    const w = await worker(taskQueue);
    const order = await createTestOrder(orders, { totalAmount: 100 });
    const paymentEventId = `pause-${randomUUID()}`;
    await w.runUntil(async () => {
      await env.client.workflow.execute('paymentWorkflow', {
        workflowId: paymentWorkflowId(paymentEventId),
        taskQueue,
        args: [{ eventId: paymentEventId, orderId: order.id, amount: 100 }],
      });
      await env.client.workflow.getHandle(orderWorkflowId(order.id)).result();
      expect((await orders.findById(order.id))?.shipmentStatus).toBe('requested');

      // The warehouse goes down and is paused; then the payment is refunded in full.
      partners.warehouse.setMode({ kind: 'unavailable', status: 503 });
      expect((await pauses.pause('warehouse', 'ops-test', 'warehouse outage')).kind).toBe('paused');
      const refundEventId = `pause-refund-${randomUUID()}`;
      const refund = await env.client.workflow.execute('refundWorkflow', {
        workflowId: refundWorkflowId(refundEventId),
        taskQueue,
        args: [
          {
            eventId: refundEventId,
            paymentRef: paymentEventId,
            kind: 'refund',
            refundId: `re_${randomUUID()}`,
            amount: 100,
            status: 'succeeded',
          },
        ],
      });
      expect(refund).toEqual({ orderId: order.id, orderWorkflowId: orderWorkflowId(order.id) });

      // Thirty minutes: six times the cancel's whole retry budget (5 min,
      // RetryPolicies.warehouseCancellation).
      const before = await env.currentTimeMs();
      await env.sleep('30 minutes');
      expect((await env.currentTimeMs()) - before).toBeGreaterThanOrEqual(30 * 60 * 1000);
      expect(partners.warehouse.cancels).toHaveLength(0);
      const handle = env.client.workflow.getHandle(orderWorkflowId(order.id));
      const description = await handle.describe();
      expect(description.status.name).toBe('RUNNING');
      expect(description.typedSearchAttributes.get(PartnerPausedSearchAttribute)).toBe('warehouse');
      const held = await orders.findById(order.id);
      expect(held?.shipmentStatus).toBe('requested');
      expect(held?.returnReviewRequestedAt).toBeNull();

      partners.warehouse.setMode({ kind: 'ok' });
      expect((await pauses.resume('warehouse')).kind).toBe('resumed');
      // No signal here (one the resume missed): the held run reads the table at its next
      // re-check, 16 minutes after the last.
      await handle.result();
    });
    const after = await orders.findById(order.id);
    expect(after?.shipmentStatus).toBe('cancelled');
    expect(after?.returnReviewRequestedAt).toBeNull();
    // One call after the resume, and it went through: none while paused, none failed.
    expect(partners.warehouse.cancels.map((c) => c.status)).toEqual([200]);
    await expect(
      env.client.workflow.getHandle(returnReviewAlertWorkflowId(order.id)).describe(),
    ).rejects.toThrow(WorkflowNotFoundError);
  });
});
