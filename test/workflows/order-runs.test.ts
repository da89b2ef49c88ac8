import { randomUUID } from 'node:crypto';
import { CancelledFailure, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import { ActivityFailure, ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Activities } from '../../src/activities';
import type { Alert } from '../../src/shared/alert';
import { refundReviewAlertWorkflowId } from '../../src/shared/alert';
import { FailureType } from '../../src/shared/errors';
import {
  paymentRecordedSignal,
  type OrderPaymentEvent,
  type OrderWorkflowInput,
} from '../../src/shared/order';
import { OrderIdSearchAttribute } from '../../src/shared/search-attributes';
import { recordingActivities } from '../support/mock-activities';
import { bundledWorker, workflowBundle } from '../support/bundles';
import { createDevServerEnv, createTimeSkippingEnv } from '../../harness/temporal/test-env';

// The order workflow's run boundaries: what a run is tagged with, what it hands on when it
// continues as new, when it must not, and how it ends when a step after the warehouse fails for
// good or an operator cancels it. Activities are mocks that record their calls.

const EventType = temporal.api.enums.v1.EventType;

let bundle: WorkflowBundleWithSourceMap;
beforeAll(async () => {
  bundle = await workflowBundle({ workflowsPath: require.resolve('./fixtures/workflows') });
});

const event = (fields: Partial<OrderPaymentEvent> = {}): OrderPaymentEvent => ({
  eventId: randomUUID(),
  paymentId: 7,
  amount: 5400,
  firstForOrder: true,
  ...fields,
});

/** The alert workflow's activities: a failed run reports to its digest, other alerts deliver. */
const ALERTING = new Set(['deliverAlert', 'reportFailure']);

/** Mocked activities that record their calls, as `[name, first argument]`. */
function recording(overrides: Partial<Activities>, calls: Array<[string, unknown]>): Activities {
  return recordingActivities(overrides, (name, args) => {
    calls.push([name, args[0]]);
  });
}

/** Feeds order 12's workflow one event, as the payment workflow's hand-over does. */
function handOver(
  env: TestWorkflowEnvironment,
  taskQueue: string,
  workflowId: string,
  paymentEvent: OrderPaymentEvent,
  options: { input?: Partial<OrderWorkflowInput> } = {},
) {
  return env.client.workflow.signalWithStart('orderWorkflow', {
    workflowId,
    taskQueue,
    args: [{ orderId: 12, ...options.input }],
    signal: paymentRecordedSignal,
    signalArgs: [paymentEvent],
    // The hand-over activity tags the run with its order at start.
    typedSearchAttributes: [{ key: OrderIdSearchAttribute, value: 12 }],
    workflowExecutionTimeout: '1 day',
  });
}

/** Runs `body` with a worker of the order workflows on a fresh task queue. */
async function withWorker<T>(
  env: TestWorkflowEnvironment,
  activities: Partial<Activities>,
  body: (taskQueue: string, calls: Array<[string, unknown]>) => Promise<T>,
): Promise<T> {
  const calls: Array<[string, unknown]> = [];
  const taskQueue = `test-${randomUUID()}`;
  const worker = await bundledWorker(env, bundle, taskQueue, recording(activities, calls));
  return worker.runUntil(body(taskQueue, calls));
}

/** The workflow's failure, down to the failure it threw. */
async function failureOf(handle: WorkflowHandle): Promise<Error | undefined> {
  const error = await handle.result().then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(WorkflowFailedError);
  return (error as WorkflowFailedError).cause;
}

describe('orderWorkflow, one run', () => {
  let env: TestWorkflowEnvironment;
  beforeEach(async () => {
    env = await createTimeSkippingEnv();
  });
  afterEach(async () => {
    await env?.teardown();
  });

  it('does the events the previous run handed on first, then those signalled, all in this run', async () => {
    const workflowId = `order-12-${randomUUID()}`;
    const handedOn = event();
    const doubleCharge = event({ firstForOrder: false, paymentId: 8 });
    const { result, status, calls } = await withWorker(env, {}, async (taskQueue, calls) => {
      const handle = await handOver(env, taskQueue, workflowId, doubleCharge, {
        input: { pending: [handedOn] },
      });
      const result = await handle.result();
      await env.client.workflow
        .getHandle(refundReviewAlertWorkflowId(12, doubleCharge.eventId))
        .result();
      const { status } = await env.client.workflow
        .getHandle(workflowId, handle.signaledRunId)
        .describe();
      return { result, status: status.name, calls };
    });

    expect(status).toBe('COMPLETED');
    expect(result).toEqual({
      orderId: 12,
      processed: [
        { eventId: handedOn.eventId, outcome: 'fulfilled' },
        { eventId: doubleCharge.eventId, outcome: 'refund_review' },
      ],
    });
    expect(calls.filter(([name]) => name === 'notifyWarehouse')).toHaveLength(1);
    const [, alert] = calls.find(([name]) => name === 'deliverAlert')!;
    expect((alert as Alert).failureMessage).toBe(
      `order 12 was paid again by event ${doubleCharge.eventId} (payment 8, amount 5400): review a refund`,
    );
  });

  it('fails for good with OrderEventFailed when the confirmation mail fails for good, after the other events', async () => {
    const workflowId = `order-12-${randomUUID()}`;
    const paid = event();
    const doubleCharge = event({ firstForOrder: false });
    const { failure, calls } = await withWorker(
      env,
      {
        sendOrderConfirmation: async () => {
          // A second payment reaches the order while the first is being confirmed.
          await env.client.workflow
            .getHandle(workflowId)
            .signal(paymentRecordedSignal, doubleCharge);
          throw ApplicationFailure.create({
            type: FailureType.MailRejected,
            message: 'mailbox unavailable',
            nonRetryable: true,
          });
        },
      },
      async (taskQueue, calls) => {
        const handle = await handOver(env, taskQueue, workflowId, paid);
        const failure = await failureOf(handle);
        await env.client.workflow
          .getHandle(refundReviewAlertWorkflowId(12, doubleCharge.eventId))
          .result();
        return { failure, calls };
      },
    );

    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({
      type: FailureType.OrderEventFailed,
      message: `order 12: event ${paid.eventId} could not be processed: mailbox unavailable`,
      details: [{ orderId: 12, eventId: paid.eventId }],
      nonRetryable: true,
    });
    expect(failure!.cause).toBeInstanceOf(ActivityFailure);
    expect(calls.map(([name]) => name).filter((name) => !ALERTING.has(name))).toEqual([
      'notifyWarehouse',
      'setShipmentStatus',
      'sendOrderConfirmation',
      'requestRefundReview',
    ]);
  });

  it('fails for good with FulfilmentFailed, saying why, when the warehouse refuses the order', async () => {
    const workflowId = `order-12-${randomUUID()}`;
    const failure = await withWorker(
      env,
      {
        notifyWarehouse: async () => {
          throw ApplicationFailure.create({
            type: FailureType.WarehouseRejected,
            message: 'warehouse rejected the shipment request with 400',
            nonRetryable: true,
          });
        },
      },
      async (taskQueue) => failureOf(await handOver(env, taskQueue, workflowId, event())),
    );

    expect(failure).toMatchObject({
      type: FailureType.FulfilmentFailed,
      message:
        'order 12 could not be handed to the warehouse (non_retryable): warehouse rejected the shipment request with 400',
      nonRetryable: true,
    });
  });

  it('ends as Cancelled when an operator cancels it mid-step: not failed, nothing compensated', async () => {
    const workflowId = `order-12-${randomUUID()}`;
    const { failure, calls } = await withWorker(
      env,
      {
        notifyWarehouse: async () => {
          await env.client.workflow.getHandle(workflowId).cancel();
          // Waits until the worker cancels it (the workflow does not wait for that).
          await Context.current().cancelled;
          throw new Error('unreachable');
        },
      },
      async (taskQueue, calls) => {
        const handle = await handOver(env, taskQueue, workflowId, event());
        return { failure: await failureOf(handle), calls };
      },
    );

    expect(failure).toBeInstanceOf(CancelledFailure);
    expect(calls.map(([name]) => name)).toEqual(['notifyWarehouse']);
  });
});

describe('orderWorkflow, across runs (a server that suggests continue-as-new after 10 events)', () => {
  let env: TestWorkflowEnvironment;
  beforeAll(async () => {
    env = await createDevServerEnv({ suggestContinueAsNewAfterEvents: 10 });
  }, 60_000);
  afterAll(async () => {
    await env?.teardown();
  });

  /** Every run of a workflow from `firstRunId` on, following continue-as-new. */
  async function runsFrom(workflowId: string, firstRunId: string) {
    const runs: Array<{ status: string; startedWithOrderId: boolean }> = [];
    for (let runId: string | undefined = firstRunId; runId;) {
      const handle: WorkflowHandle = env.client.workflow.getHandle(workflowId, runId);
      const events = (await handle.fetchHistory()).events ?? [];
      const started = events[0]!.workflowExecutionStartedEventAttributes!;
      const last = events[events.length - 1]!;
      runs.push({
        status: (await handle.describe()).status.name,
        startedWithOrderId: Boolean(started.searchAttributes?.indexedFields?.OrderId),
      });
      runId =
        last.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW
          ? last.workflowExecutionContinuedAsNewEventAttributes!.newExecutionRunId!
          : undefined;
    }
    return runs;
  }

  it('hands the events still to do and the IDs seen to a run tagged at start, and ends once none is left', async () => {
    const workflowId = `order-12-${randomUUID()}`;
    const paid = event();
    const doubleCharges = [event({ firstForOrder: false }), event({ firstForOrder: false })];
    let resent = false;
    const { result, runs, calls } = await withWorker(
      env,
      {
        notifyWarehouse: async () => {
          // Two more payments arrive while the first is with the warehouse.
          for (const e of doubleCharges) {
            await env.client.workflow.getHandle(workflowId).signal(paymentRecordedSignal, e);
          }
          return { shipmentId: 'shp_1', replayed: false };
        },
        requestRefundReview: async () => {
          // The first payment's hand-over is retried after its run continued as new.
          if (!resent) {
            resent = true;
            await env.client.workflow.getHandle(workflowId).signal(paymentRecordedSignal, paid);
          }
        },
      },
      async (taskQueue, calls) => {
        const handle = await handOver(env, taskQueue, workflowId, paid);
        const result = await handle.result();
        for (const e of doubleCharges) {
          await env.client.workflow.getHandle(refundReviewAlertWorkflowId(12, e.eventId)).result();
        }
        return { result, runs: await runsFrom(workflowId, handle.signaledRunId), calls };
      },
    );

    expect(runs.length).toBeGreaterThanOrEqual(2);
    expect(runs.slice(0, -1).map((r) => r.status)).toEqual(
      runs.slice(0, -1).map(() => 'CONTINUED_AS_NEW'),
    );
    expect(runs[runs.length - 1]!.status).toBe('COMPLETED');
    expect(runs.every((r) => r.startedWithOrderId)).toBe(true);
    // The last run did the last event, and did not continue into a run with nothing to do.
    expect(result.processed[result.processed.length - 1]).toEqual({
      eventId: doubleCharges[1]!.eventId,
      outcome: 'refund_review',
    });
    // Each event once, across runs: the re-sent first payment was known to the later run.
    expect(calls.filter(([name]) => !ALERTING.has(name))).toEqual([
      ['notifyWarehouse', { orderId: 12 }],
      ['setShipmentStatus', { orderId: 12, status: 'requested' }],
      ['sendOrderConfirmation', { orderId: 12 }],
      ['awardLoyaltyPoints', { orderId: 12 }],
      ['requestRefundReview', { orderId: 12, eventId: doubleCharges[0]!.eventId }],
      ['requestRefundReview', { orderId: 12, eventId: doubleCharges[1]!.eventId }],
    ]);
  });

  it('keeps a failed event on its run, where `ops retry` finds it, even when continue-as-new is suggested', async () => {
    const workflowId = `order-12-${randomUUID()}`;
    const doubleCharge = event({ firstForOrder: false });
    const { failure, runs, calls } = await withWorker(
      env,
      {
        notifyWarehouse: async () => {
          await env.client.workflow
            .getHandle(workflowId)
            .signal(paymentRecordedSignal, doubleCharge);
          throw ApplicationFailure.create({
            type: FailureType.WarehouseRejected,
            message: 'warehouse rejected the shipment request with 400',
            nonRetryable: true,
          });
        },
      },
      async (taskQueue, calls) => {
        const handle = await handOver(env, taskQueue, workflowId, event());
        const failure = await failureOf(handle);
        await env.client.workflow
          .getHandle(refundReviewAlertWorkflowId(12, doubleCharge.eventId))
          .result();
        return { failure, runs: await runsFrom(workflowId, handle.signaledRunId), calls };
      },
    );

    expect(failure).toMatchObject({ type: FailureType.FulfilmentFailed });
    expect(runs.map((r) => r.status)).toEqual(['FAILED']);
    expect(calls.map(([name]) => name).filter((name) => !ALERTING.has(name))).toEqual([
      'notifyWarehouse',
      // Not paused: the failure is the warehouse's, and the order is compensated.
      'partnerPauseState',
      'setShipmentStatus',
      'requestRefundReview',
    ]);
  });
});
