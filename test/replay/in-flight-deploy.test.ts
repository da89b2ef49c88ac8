import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Activities } from '../../src/activities';
import { FailureType } from '../../src/shared/errors';
import { paymentRecordedSignal, type OrderWorkflowResult } from '../../src/shared/order';
import { createTimeSkippingEnv } from '../support/temporal';
import { workflowBundle } from '../support/bundles';

// A deploy while order runs are in flight: a run started by the code before the retry-policy
// change (commit ae6fb00, which retried the warehouse in a workflow loop with durable timers)
// is parked in a backoff when its worker is replaced by one running the current code. The new
// worker must finish it on the old path (patch 'warehouse-retry-policy'), not fail it with a
// non-determinism error. The old code is its workflow bundle as built then
// (`bundleWorkflowCode` of ae6fb00's src/workflows with its interceptors), kept gzipped: like
// the recorded histories, it is a snapshot of what ran, not code to maintain.
const OLD_BUNDLE = path.join(__dirname, 'fixtures', 'workflow-bundle-ae6fb00.js.gz');

let env: TestWorkflowEnvironment;
let currentBundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  env = await createTimeSkippingEnv();
  currentBundle = await workflowBundle();
});

afterAll(async () => {
  await env?.teardown();
});

function activities(warehouseUp: () => boolean, calls: string[]): Activities {
  const record =
    <T>(name: string, result: T) =>
    async () => {
      calls.push(name);
      return result;
    };
  return {
    recordPayment: record('recordPayment', { paymentId: 1, created: true, firstForOrder: true }),
    handOverToOrder: record('handOverToOrder', undefined),
    notifyWarehouse: async () => {
      calls.push('notifyWarehouse');
      if (!warehouseUp())
        throw ApplicationFailure.create({
          type: FailureType.WarehouseUnavailable,
          message: 'warehouse answered 503',
        });
      return { shipmentId: 'shp_1', replayed: false };
    },
    setShipmentStatus: record('setShipmentStatus', undefined),
    requestRefundReview: record('requestRefundReview', undefined),
    sendOrderConfirmation: record('sendOrderConfirmation', { sent: true, messageId: '<m@t>' }),
    awardLoyaltyPoints: record('awardLoyaltyPoints', { awarded: true, points: 1, balance: 1 }),
    deliverAlert: record('deliverAlert', { delivered: true }),
  };
}

it('finishes a run that the previous code parked in a warehouse backoff', async () => {
  const taskQueue = `deploy-${randomUUID()}`;
  const workflowId = `order-12-${randomUUID()}`;
  const calls: string[] = [];
  let warehouseUp = false;

  // Before the deploy: the old worker starts the order; the warehouse is down, so after attempt
  // #1 the old code waits 10 s on a durable timer. Time stands still here (nobody awaits a
  // result), so the run stays parked in that backoff while the worker goes away.
  const oldWorker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: { code: gunzipSync(readFileSync(OLD_BUNDLE)).toString('utf8') },
    activities: activities(() => warehouseUp, calls),
    // No sticky cache: the next workflow task must go to whichever worker polls the queue, as
    // after a real deploy, not wait for this one's sticky queue to time out.
    maxCachedWorkflows: 0,
  });
  const handle = await oldWorker.runUntil(async () => {
    const started = await env.client.workflow.signalWithStart('orderWorkflow', {
      workflowId,
      taskQueue,
      args: [{ orderId: 12 }],
      signal: paymentRecordedSignal,
      signalArgs: [{ eventId: 'evt_1', paymentId: 1, amount: 5400, firstForOrder: true }],
      workflowExecutionTimeout: '1 day',
    });
    await waitForEvent(workflowId, (e) => Boolean(e.timerStartedEventAttributes));
    return started;
  });
  const parked = await env.client.workflow.getHandle(workflowId).fetchHistory();
  const attempts = (parked.events ?? []).flatMap(
    (e) => e.activityTaskScheduledEventAttributes?.activityId ?? [],
  );
  expect(attempts).toEqual(['notify-warehouse#1']);

  // The deploy: the current code takes over, and the warehouse is back.
  warehouseUp = true;
  const newWorker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: currentBundle,
    activities: activities(() => warehouseUp, calls),
  });
  const result = await newWorker.runUntil(() => handle.result() as Promise<OrderWorkflowResult>);

  expect(result).toEqual({
    orderId: 12,
    processed: [{ eventId: 'evt_1', outcome: 'fulfilled' }],
  });
  // The old path carried on: attempt #2 as a second activity, after the old timer.
  const finished = await env.client.workflow.getHandle(workflowId).fetchHistory();
  expect(
    (finished.events ?? []).flatMap(
      (e) => e.activityTaskScheduledEventAttributes?.activityId ?? [],
    )[1],
  ).toBe('notify-warehouse#2');
  expect(calls).toEqual([
    'notifyWarehouse',
    'notifyWarehouse',
    'setShipmentStatus',
    'sendOrderConfirmation',
    'awardLoyaltyPoints',
  ]);
});

async function waitForEvent(
  workflowId: string,
  match: (
    e: NonNullable<
      Awaited<
        ReturnType<ReturnType<typeof env.client.workflow.getHandle>['fetchHistory']>
      >['events']
    >[number],
  ) => boolean,
): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
    if ((history.events ?? []).some(match)) return;
    if (Date.now() > deadline) throw new Error(`${workflowId}: the event did not happen in time`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
