import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment, type TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { createActivities } from '../../src/activities';
import {
  createLoyaltyRepository,
  createOrdersRepository,
  createPaymentsRepository,
} from '../../src/db';
import { listFailedWorkflows } from '../../src/operator/failed-workflows';
import { retryFailedWorkflow } from '../../src/operator/retry';
import { failureAlertWorkflowId } from '../../src/shared/alert';
import { paymentWorkflowId } from '../../src/shared/constants';
import {
  orderWorkflowId,
  paymentRecordedSignal,
  type OrderPaymentEvent,
  type OrderWorkflowResult,
} from '../../src/shared/order';
import type { PaymentRecordedResult, PaymentWorkflowResult } from '../../src/shared/payment';
import { startAlertSink, type AlertSink } from '../operations/helpers';
import { testActivityDeps } from '../../harness/activity-deps';
import { failureAlertWorkflows } from '../support/failure-alerts';
import { bundledWorker, workflowBundle } from '../support/bundles';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';
import { createTestOrder } from '../support/orders';
import { startPartners, type Partners } from '../support/stack';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { uniqueEventId } from '../support/webhook';

// Issue 24, defects 1 and 2, on the dev server (the operator's reset needs a real server): a
// payment is handed to its order's workflow whenever no order run has finished with it yet, and
// never again after that, whatever repeats the hand-over.
let env: TestWorkflowEnvironment;
let db: TestDatabaseHandle;
let partners: Partners;
let sink: AlertSink;
let worker: Worker;
let running: Promise<void>;
let activities: ReturnType<typeof createActivities>;
let handOverGivesUp = false;
const taskQueue = `repeated-hand-over-${randomUUID()}`;

beforeAll(async () => {
  env = await createDevServerEnv();
  db = await testDatabases.find((d) => d.name === 'sqlite')!.create();
  partners = await startPartners();
  sink = await startAlertSink();
  activities = createActivities({
    ...testActivityDeps(db, partners),
    alerts: { alertWebhookUrl: sink.url, temporalUiUrl: undefined },
    client: env.client,
  });
  worker = await bundledWorker(env, await workflowBundle(), taskQueue, {
    ...activities,
    // Stands in for the hand-over's day-long deadline running out (a frontend down that long):
    // the failure the payment workflow then ends with, after its payment row committed.
    handOverToOrder: async (input: Parameters<typeof activities.handOverToOrder>[0]) => {
      if (handOverGivesUp) {
        throw ApplicationFailure.create({
          type: 'HandOverGaveUp',
          message: 'the Temporal frontend could not be reached before the deadline',
          nonRetryable: true,
        });
      }
      return activities.handOverToOrder(input);
    },
  });
  running = worker.run();
}, 120_000);

afterAll(async () => {
  worker?.shutdown();
  await running;
  await sink?.close();
  await partners?.close();
  await db?.close();
  await env?.teardown();
});

const orders = () => createOrdersRepository(db.db);

function startPayment(eventId: string, orderId: number, workflowId = paymentWorkflowId(eventId)) {
  return env.client.workflow.start('paymentWorkflow', {
    taskQueue,
    workflowId,
    args: [{ eventId, orderId, amount: 5400 }],
    workflowExecutionTimeout: '5 minutes',
  });
}

/** Failure alerts raised for one workflow's failed runs. */
const failureAlertsFor = (workflowId: string) => failureAlertWorkflows(env.client, workflowId);

/** A paid order whose order run failed, the warehouse refusing it (the caller sets it back). */
async function paidOrderWhoseRunFailed(name: string) {
  const order = await createTestOrder(orders(), {
    customerEmail: `${name}-${randomUUID()}@x.test`,
  });
  const eventId = uniqueEventId();
  const workflowId = orderWorkflowId(order.id);
  partners.warehouse.setMode({ kind: 'reject', status: 400 });
  const payment = (await (await startPayment(eventId, order.id)).result()) as PaymentRecordedResult;
  await expect(env.client.workflow.getHandle(workflowId).result()).rejects.toBeInstanceOf(
    WorkflowFailedError,
  );
  return { order, eventId, workflowId, payment };
}

it('ops retry of a payment whose hand-over gave up hands it over: the order is fulfilled once', async () => {
  const order = await createTestOrder(orders(), { customerEmail: `retry-${randomUUID()}@x.test` });
  const eventId = uniqueEventId();
  handOverGivesUp = true;
  const payment = await startPayment(eventId, order.id);
  await expect(payment.result()).rejects.toBeInstanceOf(WorkflowFailedError);
  handOverGivesUp = false;
  // Recorded and paid, but never handed over: nothing shipped.
  const [row] = await createPaymentsRepository(db.db).listByOrder(order.id);
  expect(await orders().findById(order.id)).toMatchObject({ status: 'paid', shipmentStatus: null });

  const retried = await retryFailedWorkflow(env.client, payment.workflowId, { reason: 'test' });
  const result: PaymentWorkflowResult = await env.client.workflow
    .getHandle(payment.workflowId, retried.newRunId)
    .result();

  // The new run does not own the row (another run ID) and still hands the payment over.
  expect(result).toEqual({
    paymentId: row!.id,
    created: false,
    orderWorkflowId: orderWorkflowId(order.id),
  });
  const fulfilled: OrderWorkflowResult = await env.client.workflow
    .getHandle(orderWorkflowId(order.id))
    .result();
  expect(fulfilled.processed).toEqual([{ eventId, outcome: 'fulfilled' }]);
  expect(await orders().findById(order.id)).toMatchObject({ shipmentStatus: 'requested' });
  expect(
    [...partners.warehouse.shipments.values()].filter((s) => s.orderId === order.id),
  ).toHaveLength(1);
  expect(
    partners.smtp.messages.filter((m) => m.envelopeTo.includes(order.customerEmail)),
  ).toHaveLength(1);
  expect(await createLoyaltyRepository(db.db).ledgerFor(order.userId)).toContainEqual(
    expect.objectContaining({ orderId: order.id }),
  );
});

it('a hand-over repeated after the order run failed starts no second run, warehouse call or alert', async () => {
  try {
    const { order, eventId, workflowId, payment } = await paidOrderWhoseRunFailed('fail');
    const { runId: failedRunId } = await env.client.workflow.getHandle(workflowId).describe();
    await env.client.workflow.getHandle(failureAlertWorkflowId(workflowId, failedRunId)).result();

    // The same hand-over again, as the payment workflow's task does when its worker died
    // between the signal-with-start and the task's completion and another worker retries it.
    const event: OrderPaymentEvent = {
      eventId,
      paymentId: payment.paymentId,
      amount: 5400,
      firstForOrder: true,
      amountMatchesOrder: true,
    };
    const handOver = { orderId: order.id, event };
    const again = await new MockActivityEnvironment({
      workflowExecution: { workflowId: paymentWorkflowId(eventId), runId: 'retried-task' },
      taskQueue,
    }).run((input: typeof handOver) => activities.handOverToOrder(input), handOver);

    // The failed run stays the order's latest, where `ops failed` and `ops retry` find it.
    const latest = await env.client.workflow.getHandle(workflowId).describe();
    expect(latest).toMatchObject({ runId: failedRunId, status: { name: 'FAILED' } });
    const failed = await listFailedWorkflows(env.client, { workflowType: 'orderWorkflow' });
    expect(failed.find((w) => w.workflowId === workflowId)?.runId).toBe(failedRunId);
    expect(partners.warehouse.requests.filter((r) => r.orderId === order.id)).toHaveLength(1);
    expect(await failureAlertsFor(workflowId)).toHaveLength(1);
    expect(await orders().findById(order.id)).toMatchObject({ shipmentStatus: 'failed' });
    expect(again).toEqual({ handedOver: false });
  } finally {
    partners.warehouse.setMode({ kind: 'ok' });
  }
});

it('an order run given an event another run finished with does nothing with it', async () => {
  // The hand-over read the event as not yet handled, and the run that handled it closed before
  // its signal-with-start arrived: a new run starts with the event.
  try {
    const { order, eventId, workflowId, payment } = await paidOrderWhoseRunFailed('race');
    const late = await env.client.workflow.signalWithStart('orderWorkflow', {
      taskQueue,
      workflowId,
      args: [{ orderId: order.id }],
      signal: paymentRecordedSignal,
      signalArgs: [{ eventId, paymentId: payment.paymentId, amount: 5400, firstForOrder: true }],
      workflowExecutionTimeout: '5 minutes',
    });
    const result: OrderWorkflowResult = await late.result();
    expect(result.processed).toEqual([{ eventId, outcome: 'already_handled' }]);
    expect(partners.warehouse.requests.filter((r) => r.orderId === order.id)).toHaveLength(1);
    expect(
      await env.client.workflow.count(
        `WorkflowId = "${workflowId}" AND ExecutionStatus = "Failed"`,
      ),
    ).toMatchObject({ count: 1 });
  } finally {
    partners.warehouse.setMode({ kind: 'ok' });
  }
});
