import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Activities } from '../../src/activities';
import { failureAlertWorkflowId } from '../../src/shared/alert';
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
  currentBundle = await workflowBundle();
});

// A test server per test: after a run that fails and starts its alert, the Java test server
// can keep time skipping locked for the next runs (see test/workflows/payment.test.ts).
beforeEach(async () => {
  env = await createTimeSkippingEnv();
});

afterEach(async () => {
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

/**
 * Before the deploy: the old worker starts the order; the warehouse is down, so after attempt
 * #1 the old code waits 10 s on a durable timer. Time stands still here (nobody awaits a
 * result), so the run stays parked in that backoff while the worker goes away.
 */
async function parkOldRun(
  taskQueue: string,
  workflowId: string,
  warehouseUp: () => boolean,
  calls: string[],
) {
  const oldWorker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: { code: gunzipSync(readFileSync(OLD_BUNDLE)).toString('utf8') },
    activities: activities(warehouseUp, calls),
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
  expect(await scheduledAttempts(workflowId)).toEqual(['notify-warehouse#1']);
  return handle;
}

/** The IDs of the warehouse attempts the run scheduled, one activity each on the old path. */
async function scheduledAttempts(workflowId: string): Promise<string[]> {
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? [])
    .flatMap((e) => e.activityTaskScheduledEventAttributes?.activityId ?? [])
    .filter((id) => id.startsWith('notify-warehouse#'));
}

/** The deploy: a worker of the current code takes over the task queue. */
function currentWorker(taskQueue: string, warehouseUp: () => boolean, calls: string[]) {
  return Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: currentBundle,
    activities: activities(warehouseUp, calls),
  });
}

it('finishes a run that the previous code parked in a warehouse backoff', async () => {
  const taskQueue = `deploy-${randomUUID()}`;
  const workflowId = `order-12-${randomUUID()}`;
  const calls: string[] = [];
  let warehouseUp = false;
  const handle = await parkOldRun(taskQueue, workflowId, () => warehouseUp, calls);

  // The warehouse is back by the time the current code takes over.
  warehouseUp = true;
  const newWorker = await currentWorker(taskQueue, () => warehouseUp, calls);
  const result = await newWorker.runUntil(() => handle.result() as Promise<OrderWorkflowResult>);

  expect(result).toEqual({
    orderId: 12,
    processed: [{ eventId: 'evt_1', outcome: 'fulfilled' }],
  });
  // The old path carried on: attempt #2 as a second activity, after the old timer.
  expect((await scheduledAttempts(workflowId))[1]).toBe('notify-warehouse#2');
  expect(calls).toEqual([
    'notifyWarehouse',
    'notifyWarehouse',
    'setShipmentStatus',
    'sendOrderConfirmation',
    'awardLoyaltyPoints',
  ]);
});

it('fails and compensates such a run, on the old budget, when the warehouse stays down', async () => {
  const taskQueue = `deploy-${randomUUID()}`;
  const workflowId = `order-12-${randomUUID()}`;
  const calls: string[] = [];
  const handle = await parkOldRun(taskQueue, workflowId, () => false, calls);

  const newWorker = await currentWorker(taskQueue, () => false, calls);
  const failure = await newWorker.runUntil(async () => {
    const error = await handle.result().then(
      () => undefined,
      (err: unknown) => err,
    );
    // The failure alert (a workflow on this task queue) is delivered before the worker stops.
    await env.client.workflow
      .getHandle(failureAlertWorkflowId(workflowId, handle.signaledRunId))
      .result();
    return error;
  });

  // Tries(5) of the old budget, each attempt its own activity.
  expect(await scheduledAttempts(workflowId)).toEqual(
    [1, 2, 3, 4, 5].map((n) => `notify-warehouse#${n}`),
  );
  expect(failure).toBeInstanceOf(WorkflowFailedError);
  const fulfilment = (failure as WorkflowFailedError).cause;
  expect(fulfilment).toBeInstanceOf(ApplicationFailure);
  expect(fulfilment).toMatchObject({
    type: FailureType.FulfilmentFailed,
    message:
      'order 12 could not be handed to the warehouse: notify-warehouse gave up (max_attempts) after 5 attempt(s): warehouse answered 503',
    details: [
      {
        orderId: 12,
        eventId: 'evt_1',
        step: 'notify-warehouse',
        reason: 'max_attempts',
        attempts: 5,
        lastFailureType: FailureType.WarehouseUnavailable,
        lastFailureMessage: 'warehouse answered 503',
      },
    ],
    nonRetryable: true,
  });
  expect((fulfilment as ApplicationFailure).cause).toMatchObject({
    type: FailureType.RetriesExhausted,
  });
  // Compensated (shipment_status=failed), alerted once, nothing after the warehouse.
  expect(calls).toEqual([...Array(5).fill('notifyWarehouse'), 'setShipmentStatus', 'deliverAlert']);
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
