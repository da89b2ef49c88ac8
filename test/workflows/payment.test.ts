import { randomUUID } from 'node:crypto';
import { ApplicationFailure, WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { Context } from '@temporalio/activity';
import { ActivityFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Activities } from '../../src/activities';
import { createPaymentActivities } from '../../src/activities/payment-activities';
import type { WarehouseClient } from '../../src/activities/warehouse-client';
import type { Alert } from '../../src/shared/alert';
import { failureAlertWorkflowId, refundReviewAlertWorkflowId } from '../../src/shared/alert';
import { FailureType } from '../../src/shared/errors';
import type { PaymentWorkflowInput } from '../../src/shared/payment';
import {
  paymentRecordedSignal,
  type OrderPaymentEvent,
  type OrderWorkflowInput,
} from '../../src/shared/order';
import { createTimeSkippingEnv } from '../../harness/temporal/test-env';
import { recordingActivities } from '../support/mock-activities';
import { bundledWorker, workflowBundle } from '../support/bundles';

// The payment workflow's decisions in the time-skipping test server, with mocked activities
// typed against the real ones. Retry waits of minutes pass in milliseconds.
let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;

// A fresh test server per test (under a second each): after a workflow that fails and starts
// its alert as an abandoned child, the Java test server keeps time skipping locked for the
// next workflows (seen with temporal-test-server 1.35.0), so tests must not share one.
beforeEach(async () => {
  env = await createTimeSkippingEnv();
});

afterEach(async () => {
  await env?.teardown();
});

beforeAll(async () => {
  bundle = await workflowBundle({ workflowsPath: require.resolve('./fixtures/workflows') });
});

interface Call {
  name: keyof Activities;
  args: unknown[];
  /** The test server's clock, which time-skipping moves; Date.now() here would not. */
  at: number;
}

/** The alert workflow's activities: a failed run reports to its digest, other alerts deliver. */
const ALERTING = new Set(['deliverAlert', 'reportFailure']);

/** Activities that record the effects' calls, at the test server's time, and behave as each test says. */
function mockActivities(overrides: Partial<Activities>, calls: Call[]): Activities {
  return recordingActivities(overrides, async (name, args) => {
    calls.push({ name, args, at: await env.currentTimeMs() });
  });
}

/**
 * The real notifyWarehouse activity over a warehouse that answers as the test says: the waits
 * between attempts are what the activity tells the server (nextRetryDelay) and the policy.
 */
function warehouse(answer: (attempt: number) => Promise<void>): Partial<Activities> {
  let attempt = 0;
  const client: WarehouseClient = {
    async requestShipment() {
      attempt += 1;
      await answer(attempt);
      return { shipmentId: 'shp_1', replayed: false };
    },
    cancelShipment: () => Promise.reject(new Error('not called here')),
  };
  const unused = undefined as never;
  const activities = createPaymentActivities({
    warehouse: client,
    payments: unused,
    orders: unused,
    partnerPauses: { state: async () => ({ paused: false }) } as never,
    // The attempts' signals to their workflow (the Web UI's current details) are real.
    client: env.client,
  });
  return { notifyWarehouse: (input) => activities.notifyWarehouse(input) };
}

const unavailable = () =>
  ApplicationFailure.create({
    type: FailureType.WarehouseUnavailable,
    message: 'warehouse answered 503',
  });
const rateLimited = (retryAfterMs: number) =>
  ApplicationFailure.create({
    type: FailureType.WarehouseRateLimited,
    message: 'warehouse rate-limited the request',
    details: [{ retryAfterMs }],
  });
const rejected = () =>
  ApplicationFailure.create({
    type: FailureType.WarehouseRejected,
    message: 'warehouse rejected the shipment request with 400',
    nonRetryable: true,
  });

/**
 * Runs a workflow to its end with mocked activities; returns the result or failure, and every
 * call. Workflows it starts (alerts) run on the same task queue, so their results are awaited
 * while the worker still runs: `followUps` names them, their results come back in that order.
 */
async function run(
  activities: Partial<Activities>,
  start: (
    taskQueue: string,
  ) => Promise<{ workflowId: string; runId: string; result(): Promise<unknown> }>,
  followUps: string[] = [],
) {
  const calls: Call[] = [];
  const taskQueue = `test-${randomUUID()}`;
  const worker = await bundledWorker(env, bundle, taskQueue, mockActivities(activities, calls));
  const outcome = await worker.runUntil(async () => {
    const handle = await start(taskQueue);
    const result = await handle.result().catch((err: unknown) => err);
    // The alert workflow (if any) runs on the same task queue: let it finish too.
    const alert = await env.client.workflow
      .getHandle(failureAlertWorkflowId(handle.workflowId, handle.runId))
      .result()
      .catch(() => undefined);
    // Undefined for a workflow that was never started (NotFound).
    const followUpResults = await Promise.all(
      followUps.map((id) =>
        env.client.workflow
          .getHandle(id)
          .result()
          .catch(() => undefined),
      ),
    );
    return {
      result,
      alert,
      followUpResults,
      runId: handle.runId,
      workflowId: handle.workflowId,
    };
  });
  const warehouseCalls = calls.filter((c) => c.name === 'notifyWarehouse');
  const waits = warehouseCalls.slice(1).map((c, i) => c.at - warehouseCalls[i]!.at);
  return { ...outcome, calls, warehouseCalls, waits };
}

const paymentInput = (): PaymentWorkflowInput => ({
  eventId: randomUUID(),
  orderId: 12,
  amount: 5400,
});

/** What `run` follows of a started workflow: its ID, the run that was started, its result. */
function followed(handle: WorkflowHandle, runId: string) {
  return { workflowId: handle.workflowId, runId, result: () => handle.result() };
}

/** The payment workflow for one fresh event. */
function runPayment(activities: Partial<Activities>, input = paymentInput()) {
  return run(activities, async (taskQueue) => {
    const handle = await env.client.workflow.start('paymentWorkflow', {
      workflowId: `payment-${input.eventId}`,
      taskQueue,
      args: [input],
      // A bug must fail the test quickly, not hang it.
      workflowExecutionTimeout: '1 day',
    });
    return followed(handle, handle.firstExecutionRunId);
  });
}

const orderEvent = (event: Partial<OrderPaymentEvent> = {}): OrderPaymentEvent => ({
  eventId: randomUUID(),
  paymentId: 7,
  amount: 5400,
  firstForOrder: true,
  ...event,
});

/**
 * Hands `event` to order 12's workflow (started with `input` if it is not running), as the payment
 * workflow's hand-over does: the run it reached.
 */
async function handOver(
  taskQueue: string,
  event: OrderPaymentEvent,
  { workflowId = `order-12-${randomUUID()}`, input = {} }: HandOverOptions = {},
) {
  const handle = await env.client.workflow.signalWithStart('orderWorkflow', {
    workflowId,
    taskQueue,
    args: [{ orderId: 12, ...input }],
    signal: paymentRecordedSignal,
    signalArgs: [event],
    workflowExecutionTimeout: '1 day',
  });
  return followed(handle, handle.signaledRunId);
}
interface HandOverOptions {
  workflowId?: string;
  input?: Partial<OrderWorkflowInput>;
}

/** The order workflow of order 12, fed one payment event as the payment workflow does. */
/** The payment's activities, its recording answering `result`. */
const recorded = (result: Awaited<ReturnType<Activities['recordPayment']>>) => ({
  recordPayment: async () => result,
});

function runOrder(
  activities: Partial<Activities>,
  event: Partial<OrderPaymentEvent> = {},
  more: { workflowId?: string; followUps?: string[] } = {},
) {
  const paymentEvent = orderEvent(event);
  const workflowId = more.workflowId ?? `order-12-${randomUUID()}`;
  return run(activities, (taskQueue) => handOver(taskQueue, paymentEvent, { workflowId }), [
    refundReviewAlertWorkflowId(12, paymentEvent.eventId),
    ...(more.followUps ?? []),
  ]).then(({ followUpResults: [refundReviewAlert, ...otherFollowUps], ...r }) => ({
    ...r,
    refundReviewAlert,
    otherFollowUps,
    eventId: paymentEvent.eventId,
  }));
}

/** The run fulfilled its event: the warehouse, the shipment status, the mail, the points. */
function expectFulfilled(run: {
  result?: unknown;
  eventId: string;
  calls: Array<{ name: string }>;
}) {
  expect(run.result).toEqual({
    orderId: 12,
    processed: [{ eventId: run.eventId, outcome: 'fulfilled' }],
  });
  expect(run.calls.map((c) => c.name)).toEqual([
    'notifyWarehouse',
    'setShipmentStatus',
    'sendOrderConfirmation',
    'awardLoyaltyPoints',
  ]);
}

/** Unwraps a workflow failure down the chain: FulfilmentFailed → activity → cause. */
function failureChain(err: unknown): Array<{ type: string | undefined; details?: unknown[] }> {
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const chain: Array<{ type: string | undefined; details?: unknown[] }> = [];
  for (
    let e: Error | undefined = (err as WorkflowFailedError).cause;
    e;
    e = e.cause as Error | undefined
  ) {
    if (e instanceof ApplicationFailure)
      chain.push({ type: e.type ?? undefined, details: e.details ?? undefined });
    else if (e instanceof ActivityFailure) chain.push({ type: `activity:${e.activityType}` });
    else chain.push({ type: e.name });
  }
  return chain;
}

/** Asserts each wait is the expected one (time-skipping lands on the timer, give or take a second). */
function expectWaits(actual: number[], expectedSeconds: number[]) {
  expect(actual).toHaveLength(expectedSeconds.length);
  actual.forEach((ms, i) => {
    expect(ms).toBeGreaterThanOrEqual(expectedSeconds[i]! * 1000);
    expect(ms).toBeLessThan(expectedSeconds[i]! * 1000 + 1500);
  });
}

describe('paymentWorkflow', () => {
  it('records the payment and hands it to the order workflow with the first-payment flag', async () => {
    const input = paymentInput();
    const run = await runPayment({}, input);

    expect(run.result).toEqual({ paymentId: 7, created: true, orderWorkflowId: 'order-12' });
    expect(run.calls.map((c) => c.name)).toEqual(['recordPayment', 'handOverToOrder']);
    expect(run.calls[1]!.args).toEqual([
      {
        orderId: 12,
        event: {
          eventId: input.eventId,
          paymentId: 7,
          amount: 5400,
          firstForOrder: true,
          paidAt: expect.any(Number),
        },
      },
    ]);
    expect(run.alert).toBeUndefined();
  });

  it('hands a payment that is not the order total over as such', async () => {
    const run = await runPayment(
      recorded({ paymentId: 8, created: true, firstForOrder: false, amountMatchesOrder: false }),
    );
    const handOver = run.calls.find((c) => c.name === 'handOverToOrder')!;
    expect(handOver.args[0]).toMatchObject({
      event: { paymentId: 8, firstForOrder: false, amountMatchesOrder: false },
    });
  });

  it('hands an already recorded payment over again, with what its recording decided', async () => {
    // An operator's retry of a payment whose hand-over gave up, or a redelivery after the
    // server forgot the workflow ID: the row is there, the order workflow may never have had it.
    const run = await runPayment(
      recorded({ paymentId: 7, created: false, firstForOrder: true, amountMatchesOrder: true }),
    );

    expect(run.result).toEqual({ paymentId: 7, created: false, orderWorkflowId: 'order-12' });
    expect(run.calls.map((c) => c.name)).toEqual(['recordPayment', 'handOverToOrder']);
    expect(run.calls[1]!.args[0]).toMatchObject({
      orderId: 12,
      event: { paymentId: 7, firstForOrder: true, amountMatchesOrder: true },
    });
  });

  it('reports no order workflow when an order run had already finished with the payment', async () => {
    const run = await runPayment({
      recordPayment: async () => ({ paymentId: 7, created: false, firstForOrder: true }),
      handOverToOrder: async () => ({ handedOver: false }),
    });

    expect(run.result).toEqual({ paymentId: 7, created: false, orderWorkflowId: null });
  });

  it('completes saying unmatched, handing nothing over and alerting no one, when the order does not exist', async () => {
    const run = await runPayment({
      recordPayment: async () => ({ kind: 'unmatched', unmatchedId: 3, created: true }),
    });

    expect(run.result).toEqual({
      kind: 'unmatched',
      reason: 'unknown_order',
      unmatchedId: 3,
      created: true,
      orderId: 12,
    });
    expect(run.calls.map((c) => c.name)).toEqual(['recordPayment']);
  });
});

describe('orderWorkflow', () => {
  it('asks the warehouse to ship once, then marks the shipment requested', async () => {
    const run = await runOrder({});

    expectFulfilled(run);
    expect(run.calls.map((c) => c.args)).toEqual([
      [{ orderId: 12 }],
      [{ orderId: 12, status: 'requested' }],
      [{ orderId: 12 }],
      [{ orderId: 12 }],
    ]);
    expect(run.alert).toBeUndefined();
  });

  it('retries an outage like Tries(5) + Backoff([10, 30, 120]): five attempts, waiting 10, 30, 120, 120 s', async () => {
    const run = await runOrder(
      warehouse(async () => {
        throw unavailable();
      }),
    );

    expect(run.warehouseCalls).toHaveLength(5);
    expectWaits(run.waits, [10, 30, 120, 120]);
    expect(failureChain(run.result).map((f) => f.type)).toEqual([
      FailureType.FulfilmentFailed,
      'activity:notifyWarehouse',
      FailureType.WarehouseUnavailable,
    ]);
  });

  it('succeeds on a later attempt when the warehouse comes back', async () => {
    const run = await runOrder(
      warehouse(async (attempt) => {
        if (attempt < 3) throw unavailable();
      }),
    );

    expect(run.result).toMatchObject({ processed: [{ outcome: 'fulfilled' }] });
    expectWaits(run.waits, [10, 30]);
    expect(run.calls.find((c) => c.name === 'setShipmentStatus')!.args).toEqual([
      { orderId: 12, status: 'requested' },
    ]);
  });

  it("shows a retrying warehouse call in the workflow's current details, and clears them once shipped", async () => {
    // Read as the Web UI reads them, at the start of each attempt: what the one before said.
    const seen: string[] = [];
    const currentDetails = async (workflowId: string) =>
      (
        await env.client.workflow
          .getHandle(workflowId)
          .query<{ currentDetails?: string }>('__temporal_workflow_metadata')
      ).currentDetails ?? '';
    const workflowId = () => Context.current().info.workflowExecution!.workflowId;
    let afterShipping: string | undefined;
    const run = await runOrder({
      ...warehouse(async (attempt) => {
        seen.push(await currentDetails(workflowId()));
        if (attempt < 3) {
          throw ApplicationFailure.create({
            type: FailureType.WarehouseUnavailable,
            message: 'warehouse answered 503',
            details: [{ orderId: 12, status: 503, body: '' }],
          });
        }
      }),
      // The next activity after the warehouse took the order (a closed run answers no query
      // once the test's worker stopped).
      sendOrderConfirmation: async () => {
        afterShipping = await currentDetails(workflowId());
        return { sent: true, messageId: '<order-12-confirmation@test.local>' };
      },
    });

    expect(run.result).toMatchObject({ processed: [{ outcome: 'fulfilled' }] });
    expect(seen).toEqual([
      '',
      'warehouse attempt 1 of 5, next in 10 s, last: 503',
      'warehouse attempt 2 of 5, next in 30 s, last: 503',
    ]);
    expect(afterShipping).toBe('');
  });

  it('falls back on the policy backoff (10, 30 s) when an attempt fails without saying how long to wait', async () => {
    // A crash-like failure (not the warehouse client's typed answer): the activity cannot choose
    // a delay for it, so the policy's own exponential backoff applies.
    let attempts = 0;
    const run = await runOrder({
      notifyWarehouse: async () => {
        attempts += 1;
        if (attempts < 3) throw new Error('worker lost its socket');
        return { shipmentId: 'shp_1', replayed: false };
      },
    });

    expect(run.result).toMatchObject({ processed: [{ outcome: 'fulfilled' }] });
    expectWaits(run.waits, [10, 30]);
  });

  it('gives up at once on a rejected request (4xx): one attempt, no retry', async () => {
    const run = await runOrder(
      warehouse(async () => {
        throw rejected();
      }),
    );

    expect(run.warehouseCalls).toHaveLength(1);
    const chain = failureChain(run.result);
    expect(chain[0]!.type).toBe(FailureType.FulfilmentFailed);
    expect(chain[0]!.details?.[0]).toMatchObject({ reason: 'non_retryable' });
    expect(chain.at(-1)!.type).toBe(FailureType.WarehouseRejected);
  });

  it('waits as long as Retry-After says on 429, then retries', async () => {
    const run = await runOrder(
      warehouse(async (attempt) => {
        if (attempt === 1) throw rateLimited(45_000);
        if (attempt === 2) throw rateLimited(300_000);
      }),
    );

    expect(run.result).toMatchObject({ processed: [{ outcome: 'fulfilled' }] });
    expectWaits(run.waits, [45, 300]);
  });

  it('starts no attempt later than 30 minutes after the first (retryUntil), before the tries run out', async () => {
    const run = await runOrder(
      warehouse(async () => {
        throw rateLimited(14 * 60_000);
      }),
    );

    // Attempts at 0, 14 and 28 minutes; a fourth would start at 42 minutes: past the deadline.
    expect(run.warehouseCalls).toHaveLength(3);
    expectWaits(run.waits, [840, 840]);
    const first = run.warehouseCalls[0]!.at;
    for (const call of run.warehouseCalls) expect(call.at - first).toBeLessThan(30 * 60_000);
    const [fulfilment] = failureChain(run.result);
    expect(fulfilment!.details?.[0]).toMatchObject({ reason: 'deadline', attempts: 3 });
  });

  it('compensates when the warehouse finally fails: shipment_status=failed, cause and attempts kept', async () => {
    const run = await runOrder(
      warehouse(async () => {
        throw unavailable();
      }),
    );

    expect(run.calls.filter((c) => c.name === 'setShipmentStatus').map((c) => c.args)).toEqual([
      [{ orderId: 12, status: 'failed' }],
    ]);
    const [fulfilment] = failureChain(run.result);
    expect(fulfilment!.details?.[0]).toEqual({
      orderId: 12,
      eventId: run.eventId,
      step: 'notifyWarehouse',
      reason: 'max_attempts',
      attempts: 5,
      lastFailureType: FailureType.WarehouseUnavailable,
      lastFailureMessage: 'warehouse answered 503',
    });
  });

  it('raises exactly one alert for a failed order workflow, with the cause, attempts and order', async () => {
    const run = await runOrder(
      warehouse(async () => {
        throw unavailable();
      }),
    );

    // The failed run's alert reports it to the digest of its cause, which posts for the cause.
    const alerts = run.calls.filter((c) => ALERTING.has(c.name));
    expect(alerts.map((c) => c.name)).toEqual(['reportFailure']);
    expect(alerts[0]!.args[0]).toMatchObject<Partial<Alert>>({
      kind: 'workflow_failed',
      workflowType: 'orderWorkflow',
      workflowId: run.workflowId,
      runId: run.runId,
      orderId: 12,
      failureType: FailureType.FulfilmentFailed,
      rootCauseType: FailureType.WarehouseUnavailable,
      rootCauseMessage: 'warehouse answered 503',
      attempts: 5,
    });
    expect(run.alert).toEqual({ delivered: false, skipped: 'reported-to-digest' });
  });

  const refundReviews: Array<[string, Partial<OrderPaymentEvent>, string, string]> = [
    [
      'a further payment as a double charge',
      { firstForOrder: false },
      'DoubleCharge',
      'was paid again by event',
    ],
    [
      'a payment that is not the order total as an amount mismatch',
      { firstForOrder: false, amountMatchesOrder: false, amount: 1 },
      'AmountMismatch',
      'for amount 1, which is not its total',
    ],
  ];
  it.each(refundReviews)(
    'flags %s: a refund review and an alert, no shipment',
    async (_, event, failureType, message) => {
      const run = await runOrder({}, event);

      expect(run.result).toEqual({
        orderId: 12,
        processed: [{ eventId: run.eventId, outcome: 'refund_review' }],
      });
      expect(run.calls.map((c) => c.name).filter((n) => !ALERTING.has(n))).toEqual([
        'requestRefundReview',
      ]);
      expect(run.refundReviewAlert).toEqual({ delivered: true });
      const alert = run.calls.find((c) => c.name === 'deliverAlert')?.args[0] as Alert;
      expect(alert).toMatchObject({ kind: 'refund_review', orderId: 12, failureType });
      expect(alert.failureMessage).toContain(message);
    },
  );

  it('raises no alert when the order is fulfilled', async () => {
    const run = await runOrder({});
    expect(run.calls.filter((c) => ALERTING.has(c.name))).toHaveLength(0);
    expect(run.refundReviewAlert).toBeUndefined();
  });
});

describe('orderWorkflow: no event is lost behind a failed fulfilment', () => {
  const giveUps: Array<[string, (attempt: number) => Promise<void>, string]> = [
    [
      'by its tries (503 five times)',
      async () => {
        throw unavailable();
      },
      'max_attempts',
    ],
    [
      'by its 30-minute deadline (429, 14 minutes each)',
      async () => {
        throw rateLimited(14 * 60_000);
      },
      'deadline',
    ],
    [
      'by a 4xx on the second attempt',
      async (attempt) => {
        throw attempt === 1 ? unavailable() : rejected();
      },
      'non_retryable',
    ],
  ];

  it.each(giveUps)(
    'flags a double charge that arrived during the retries, when the fulfilment gives up %s',
    async (_name, answer, reason) => {
      const workflowId = `order-12-${randomUUID()}`;
      const doubleCharge = orderEvent({ firstForOrder: false, paymentId: 8 });
      const { notifyWarehouse } = warehouse(async (attempt) => {
        // The second payment reaches the order while its fulfilment is retrying.
        if (attempt === 1) {
          await env.client.workflow
            .getHandle(workflowId)
            .signal(paymentRecordedSignal, doubleCharge);
        }
        await answer(attempt);
      });
      const run = await runOrder(
        { notifyWarehouse },
        {},
        { workflowId, followUps: [refundReviewAlertWorkflowId(12, doubleCharge.eventId)] },
      );

      // The run fails with the fulfilment's failure (visible, alerted, retryable)...
      const [fulfilment] = failureChain(run.result);
      expect(fulfilment!.type).toBe(FailureType.FulfilmentFailed);
      expect(fulfilment!.details?.[0]).toMatchObject({ eventId: run.eventId, reason });
      // ...after making sure the partner is not paused (a paused one holds the order instead),
      // compensating and still processing the double charge, in order.
      expect(
        run.calls.filter((c) => c.name !== 'notifyWarehouse' && !ALERTING.has(c.name)),
      ).toMatchObject([
        { name: 'partnerPauseState', args: [{ partner: 'warehouse' }] },
        { name: 'setShipmentStatus', args: [{ orderId: 12, status: 'failed' }] },
        { name: 'requestRefundReview', args: [{ orderId: 12, eventId: doubleCharge.eventId }] },
      ]);
      expect(run.otherFollowUps).toEqual([{ delivered: true }]);
      const alerts = run.calls.filter((c) => ALERTING.has(c.name)).map((c) => c.args[0]);
      expect(alerts).toEqual(
        expect.arrayContaining([
          expect.objectContaining({ kind: 'refund_review', failureType: 'DoubleCharge' }),
          expect.objectContaining({
            kind: 'workflow_failed',
            failureType: FailureType.FulfilmentFailed,
          }),
        ]),
      );
      expect(alerts).toHaveLength(2);
    },
  );

  it('processes an event signalled twice once (an at-least-once hand-over)', async () => {
    const workflowId = `order-12-${randomUUID()}`;
    let event: OrderPaymentEvent | undefined;
    let reviews = 0;
    const run = await runOrder(
      {
        requestRefundReview: async (input) => {
          reviews += 1;
          // The hand-over's retry lands while the order still works on the first delivery.
          if (reviews === 1) {
            event = { ...orderEvent({ firstForOrder: false }), eventId: input.eventId };
            await env.client.workflow.getHandle(workflowId).signal(paymentRecordedSignal, event);
          }
        },
      },
      { firstForOrder: false },
      { workflowId },
    );

    expect(event?.eventId).toBe(run.eventId);
    expect(run.result).toEqual({
      orderId: 12,
      processed: [{ eventId: run.eventId, outcome: 'refund_review' }],
    });
    expect(reviews).toBe(1);
  });

  it('fulfils an event signalled twice once: one warehouse request, one mail, one award', async () => {
    const workflowId = `order-12-${randomUUID()}`;
    const eventId = randomUUID();
    let resent = false;
    const run = await runOrder(
      {
        notifyWarehouse: async () => {
          // The hand-over's retry lands while the first delivery is being fulfilled.
          if (!resent) {
            resent = true;
            await env.client.workflow
              .getHandle(workflowId)
              .signal(paymentRecordedSignal, orderEvent({ eventId }));
          }
          return { shipmentId: 'shp_1', replayed: false };
        },
      },
      { eventId },
      { workflowId },
    );

    expectFulfilled(run);
  });

  it('ignores an event the previous run of the order already took (continue-as-new carries them)', async () => {
    const event = orderEvent();
    const outcome = await run({}, (taskQueue) =>
      // What continue-as-new hands on: nothing pending, the IDs seen so far.
      handOver(taskQueue, event, { input: { pending: [], seenEventIds: [event.eventId] } }),
    );

    expect(outcome.result).toEqual({ orderId: 12, processed: [] });
    expect(outcome.calls).toEqual([]);
  });

  it('takes the events handed on as pending as seen, when no seen IDs come with them', async () => {
    const event = orderEvent();
    const outcome = await run({}, (taskQueue) =>
      handOver(taskQueue, event, { input: { pending: [event] } }),
    );

    expect(outcome.result).toEqual({
      orderId: 12,
      processed: [{ eventId: event.eventId, outcome: 'fulfilled' }],
    });
    expect(outcome.calls.filter((c) => c.name === 'notifyWarehouse')).toHaveLength(1);
  });

  it('raises no second refund-review alert when a hand-over is retried after the order run closed', async () => {
    const event = orderEvent({ firstForOrder: false });
    const workflowId = `order-12-${randomUUID()}`;
    const outcome = await run({}, async (taskQueue) => {
      const first = await handOver(taskQueue, event, { workflowId });
      await first.result();
      await env.client.workflow.getHandle(refundReviewAlertWorkflowId(12, event.eventId)).result();
      // The same event again: the closed run cannot dedup it, a new run processes it.
      const second = await handOver(taskQueue, event, { workflowId });
      expect(second.runId).not.toBe(first.runId);
      return second;
    });

    expect(outcome.result).toEqual({
      orderId: 12,
      processed: [{ eventId: event.eventId, outcome: 'refund_review' }],
    });
    expect(outcome.calls.filter((c) => c.name === 'requestRefundReview')).toHaveLength(2);
    expect(outcome.calls.filter((c) => c.name === 'deliverAlert')).toHaveLength(1);
  });
});
