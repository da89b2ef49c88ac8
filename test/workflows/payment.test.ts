import { randomUUID } from 'node:crypto';
import { ApplicationFailure, type WorkflowFailedError } from '@temporalio/client';
import { ActivityFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Activities } from '../../src/activities';
import { FailureType } from '../../src/shared/errors';
import type { PaymentWorkflowInput } from '../../src/shared/payment';
import { paymentWorkflow } from '../../src/workflows';
import { createTimeSkippingEnv } from '../support/temporal';

// The payment workflow's decisions in the time-skipping test server, with mocked activities
// typed against the real ones. Retry waits of minutes pass in milliseconds.
let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  env = await createTimeSkippingEnv();
  bundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('../../src/workflows'),
    logger: quietLogger,
  });
});

afterAll(async () => {
  await env?.teardown();
});

const quietLogger = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

type Calls = Array<{ name: keyof Activities; args: unknown[]; at: number }>;

/** Activities that record every call (with the server's time) and behave as each test says. */
function mockActivities(
  overrides: Partial<Record<keyof Activities, (...args: never[]) => unknown>>,
  calls: Calls,
) {
  const defaults: Activities = {
    recordPayment: async () => ({ paymentId: 7, created: true }),
    notifyWarehouse: async () => ({ shipmentId: 'shp_1', replayed: false }),
    setShipmentStatus: async () => undefined,
  };
  const activities = { ...defaults, ...overrides } as Activities;
  return Object.fromEntries(
    Object.entries(activities).map(([name, fn]) => [
      name,
      async (...args: unknown[]) => {
        // The test server's clock, which time-skipping moves; Date.now() here would not.
        calls.push({ name: name as keyof Activities, args, at: await env.currentTimeMs() });
        return (fn as (...a: unknown[]) => unknown)(...args);
      },
    ]),
  ) as Activities;
}

async function run(input: PaymentWorkflowInput, activities: Activities) {
  const taskQueue = `test-${randomUUID()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: bundle,
    activities,
  });
  return worker.runUntil(
    env.client.workflow.execute(paymentWorkflow, {
      workflowId: `payment-${input.eventId}`,
      taskQueue,
      args: [input],
      // A bug must fail the test quickly, not hang it.
      workflowExecutionTimeout: '1 day',
    }),
  );
}

const input: PaymentWorkflowInput = { eventId: 'evt_1', orderId: 12, amount: 5400 };

describe('paymentWorkflow', () => {
  it('records the payment, asks the warehouse to ship once, then marks the shipment requested', async () => {
    const calls: Calls = [];
    const result = await run({ ...input, eventId: randomUUID() }, mockActivities({}, calls));

    expect(result).toEqual({ paymentId: 7, created: true, shipmentRequested: true });
    expect(calls.map((c) => c.name)).toEqual([
      'recordPayment',
      'notifyWarehouse',
      'setShipmentStatus',
    ]);
    expect(calls[1]!.args).toEqual([{ orderId: 12 }]);
    expect(calls[2]!.args).toEqual([{ orderId: 12, status: 'requested' }]);
  });

  it('does nothing more when the payment was already recorded (not created by this call)', async () => {
    const calls: Calls = [];
    const result = await run(
      { ...input, eventId: randomUUID() },
      mockActivities({ recordPayment: async () => ({ paymentId: 7, created: false }) }, calls),
    );

    expect(result).toEqual({ paymentId: 7, created: false, shipmentRequested: false });
    expect(calls.map((c) => c.name)).toEqual(['recordPayment']);
  });

  it('retries a warehouse outage with growing waits and succeeds when the warehouse is back', async () => {
    const calls: Calls = [];
    let attempts = 0;
    const result = await run(
      { ...input, eventId: randomUUID() },
      mockActivities(
        {
          notifyWarehouse: async () => {
            attempts += 1;
            if (attempts < 3)
              throw ApplicationFailure.create({
                type: FailureType.WarehouseUnavailable,
                message: '503',
              });
            return { shipmentId: 'shp_1', replayed: false };
          },
        },
        calls,
      ),
    );

    expect(result.shipmentRequested).toBe(true);
    const warehouseCalls = calls.filter((c) => c.name === 'notifyWarehouse');
    expect(warehouseCalls).toHaveLength(3);
    // Time-skipped waits: at least the first retry interval between attempts.
    expect(warehouseCalls[1]!.at - warehouseCalls[0]!.at).toBeGreaterThanOrEqual(10_000);
  });

  it('fails with the OrderNotFound cause, without retrying, when the order does not exist', async () => {
    const calls: Calls = [];
    const err = await run(
      { ...input, eventId: randomUUID() },
      mockActivities(
        {
          recordPayment: async () => {
            throw ApplicationFailure.create({
              type: FailureType.OrderNotFound,
              message: 'order 12 does not exist',
              nonRetryable: true,
            });
          },
        },
        calls,
      ),
    ).catch((e: unknown) => e as WorkflowFailedError);

    expect(err).toMatchObject({ name: 'WorkflowFailedError' });
    const activityFailure = (err as WorkflowFailedError).cause;
    expect(activityFailure).toBeInstanceOf(ActivityFailure);
    expect((activityFailure as ActivityFailure).cause).toMatchObject({
      type: FailureType.OrderNotFound,
    });
    expect(calls.map((c) => c.name)).toEqual(['recordPayment']);
  });
});
