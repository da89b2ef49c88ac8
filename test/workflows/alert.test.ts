import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { bundleWorkflowCode, Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import type { Activities } from '../../src/activities';
import { failureAlertWorkflowId, type Alert } from '../../src/shared/alert';
import { FailureType } from '../../src/shared/errors';
import { sdkLogEntries } from '../support/sdk-logs';
import { createTimeSkippingEnv } from '../support/temporal';

// Alerts (the seed's Queue::failing) in the time-skipping server: one per failed workflow of
// any type, delivered under the Tries(25) + MaxExceptions(3) budget, never holding up the
// failed workflow. A fresh server per test: see the note in payment.test.ts.
let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;
const quietLogger = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

beforeAll(async () => {
  bundle = await bundleWorkflowCode({
    workflowsPath: require.resolve('./fixtures/workflows'),
    workflowInterceptorModules: [require.resolve('../../src/workflows/interceptors')],
    logger: quietLogger,
  });
});
beforeEach(async () => {
  env = await createTimeSkippingEnv();
});
afterEach(async () => {
  await env?.teardown();
});

type DeliverAlert = Activities['deliverAlert'];

/** Runs a test workflow that fails, with `deliverAlert` as given; returns what happened. */
async function failAndAlert(deliverAlert: DeliverAlert) {
  const deliveries: Array<{ alert: Alert; at: number }> = [];
  const taskQueue = `test-${randomUUID()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: bundle,
    activities: {
      deliverAlert: async (alert: Alert) => {
        deliveries.push({ alert, at: await env.currentTimeMs() });
        return deliverAlert(alert);
      },
    },
  });
  const workflowId = `failing-${randomUUID()}`;
  return worker.runUntil(async () => {
    const handle = await env.client.workflow.start('alwaysFailingWorkflow', {
      workflowId,
      taskQueue,
      args: [{ orderId: 99 }],
      workflowExecutionTimeout: '1 day',
    });
    const failure = await handle.result().catch((err: unknown) => err);
    const failedAt = (await handle.describe()).closeTime!.getTime();
    const alertHandle = env.client.workflow.getHandle(
      failureAlertWorkflowId(workflowId, handle.firstExecutionRunId),
    );
    const delivery = await alertHandle.result();
    const alertDescription = await alertHandle.describe();
    return {
      workflowId,
      runId: handle.firstExecutionRunId,
      failure,
      failedAt,
      delivery,
      deliveries,
      alertDescription,
    };
  });
}

const sinkDown = () =>
  ApplicationFailure.create({
    type: FailureType.AlertSinkUnavailable,
    message: 'alert sink answered 503',
  });
const slowDown = (retryAfterMs: number) =>
  ApplicationFailure.create({
    type: FailureType.AlertSinkRateLimited,
    message: 'slow down',
    details: [{ retryAfterMs }],
  });

describe('failure alerts', () => {
  it('raises exactly one alert for a failed workflow of any type, with its cause and a structured log line', async () => {
    const run = await failAndAlert(async () => ({ delivered: true }));

    expect(run.delivery).toEqual({ delivered: true });
    expect(run.deliveries).toHaveLength(1);
    expect(run.deliveries[0]!.alert).toMatchObject<Partial<Alert>>({
      workflowType: 'alwaysFailingWorkflow',
      workflowId: run.workflowId,
      runId: run.runId,
      orderId: 99,
      failureType: 'TestFailure',
      failureMessage: 'test workflow for order 99 failed on purpose',
    });
    const logged = sdkLogEntries().filter(
      (e) => e.message === 'workflow failed' && e.meta?.workflowId === run.workflowId,
    );
    expect(logged).toHaveLength(1);
    expect(logged[0]!.level).toBe('ERROR');
    expect(logged[0]!.meta).toMatchObject({
      alert: true,
      workflowType: 'alwaysFailingWorkflow',
      failureType: 'TestFailure',
    });
  });

  it('keeps trying a rate-limited sink for many attempts, waiting as told, and delivers once', async () => {
    let calls = 0;
    const run = await failAndAlert(async () => {
      calls += 1;
      if (calls <= 20) throw slowDown(60_000);
      return { delivered: true };
    });

    expect(run.delivery).toEqual({ delivered: true });
    expect(run.deliveries).toHaveLength(21);
    expect(run.deliveries[1]!.at - run.deliveries[0]!.at).toBeGreaterThanOrEqual(60_000);
  });

  it('gives up after three real failures (rate limits not counted) without failing or blocking anything', async () => {
    let calls = 0;
    const run = await failAndAlert(async () => {
      calls += 1;
      if (calls <= 5) throw slowDown(1_000);
      throw sinkDown();
    });

    expect(run.deliveries).toHaveLength(8);
    expect(run.delivery).toEqual({ delivered: false });
    // The alert workflow completed (it never fails, so it raises no alert of its own)...
    expect(run.alertDescription.status.name).toBe('COMPLETED');
    // ...and the failed workflow closed at once, not after the minute of delivery attempts.
    expect(run.failure).toBeInstanceOf(Error);
    expect(run.failedAt).toBeLessThanOrEqual(run.deliveries[0]!.at);
    expect(run.alertDescription.closeTime!.getTime() - run.failedAt).toBeGreaterThan(30_000);
  });
});
