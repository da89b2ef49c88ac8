import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Context } from '@temporalio/activity';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createAlertActivities } from '../../src/activities/alert-activities';
import { createAlertDigestActivities } from '../../src/activities/alert-digest-activities';
import {
  digestPostWorkflowId,
  failureAlertWorkflowId,
  type AlertDelivery,
  type Alert,
} from '../../src/shared/alert';
import { sdkLogEntries } from '../support/sdk-logs';
import { createTimeSkippingEnv } from '../../harness/temporal/test-env';
import { bundledWorker, workflowBundle } from '../support/bundles';

// Alerts (the seed's Queue::failing) in the time-skipping server: a failed workflow of any type
// reports to the digest of its cause, whose "opened" post is delivered by the real activity to a
// local sink under the Tries(25) + MaxExceptions(3) policy, never holding up the failed workflow
// (alert-digest.test.ts tests the digest itself). A fresh server per test: see
// the note in payment.test.ts.
let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;
let sink: Server;
let sinkUrl: string;
/** How the sink answers its n-th request (1-based): a status and headers. */
let answer: (n: number) => { status: number; headers?: Record<string, string> };
let sinkRequests = 0;

beforeAll(async () => {
  sink = createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const { status, headers } = answer(++sinkRequests);
      res.writeHead(status, headers).end();
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  sinkUrl = `http://127.0.0.1:${(sink.address() as AddressInfo).port}/hook`;

  bundle = await workflowBundle({ workflowsPath: require.resolve('./fixtures/workflows') });
});
afterAll(async () => {
  await new Promise((resolve) => sink?.close(resolve));
});
beforeEach(async () => {
  env = await createTimeSkippingEnv();
  sinkRequests = 0;
});
afterEach(async () => {
  await env?.teardown();
});

/**
 * The real alert delivery to the sink, which answers as `sinkAnswers` says; `deliverRecorded`
 * also records each attempt: the alert, when (in skipped time) and its attempt number.
 */
function toSink(sinkAnswers: typeof answer) {
  answer = sinkAnswers;
  const activities = createAlertActivities({
    alertWebhookUrl: sinkUrl,
    temporalUiUrl: undefined,
  });
  const deliveries: Array<{ alert: Alert; at: number }> = [];
  const attempts: number[] = [];
  const deliverAlert = (alert: Alert) => activities.deliverAlert(alert);
  const deliverRecorded = async (alert: Alert) => {
    deliveries.push({ alert, at: await env.currentTimeMs() });
    attempts.push(Context.current().info.attempt);
    return deliverAlert(alert);
  };
  return { deliverAlert, deliverRecorded, deliveries, attempts };
}

/** Runs a test workflow that fails while the sink answers as `sinkAnswers` says. */
async function failAndAlert(sinkAnswers: typeof answer) {
  const { deliverAlert, deliverRecorded, deliveries, attempts } = toSink(sinkAnswers);
  const taskQueue = `test-${randomUUID()}`;
  const worker = await bundledWorker(env, bundle, taskQueue, {
    ...createAlertDigestActivities({ client: env.client }),
    // Not the digest's later posts: the test ends before them.
    deliverAlert: (alert: Alert) =>
      alert.kind === 'failures_digest' || alert.kind === 'failures_resolved'
        ? deliverAlert(alert)
        : deliverRecorded(alert),
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
    const reported = (await env.client.workflow
      .getHandle(failureAlertWorkflowId(workflowId, handle.firstExecutionRunId))
      .result()) as AlertDelivery;
    const alertHandle = env.client.workflow.getHandle(
      digestPostWorkflowId('TestFailure', handle.firstExecutionRunId, 'opened'),
    );
    const delivery = await alertHandle.result();
    const alertDescription = await alertHandle.describe();
    return {
      workflowId,
      runId: handle.firstExecutionRunId,
      failure,
      failedAt,
      reported,
      delivery,
      deliveries,
      attempts,
      alertDescription,
    };
  });
}

/**
 * Delivers one refund-review alert, which goes to the sink by itself (no digest), while the sink
 * answers as `sinkAnswers` says: the delivery policy without a failed workflow, after which the
 * test server would not skip the long Retry-After waits (see payment.test.ts).
 */
async function deliverDirectly(sinkAnswers: typeof answer) {
  const { deliverRecorded, deliveries, attempts } = toSink(sinkAnswers);
  const taskQueue = `test-${randomUUID()}`;
  const worker = await bundledWorker(env, bundle, taskQueue, { deliverAlert: deliverRecorded });
  const alert: Alert = {
    kind: 'refund_review',
    namespace: 'default',
    workflowType: 'orderWorkflow',
    workflowId: 'order-99',
    runId: randomUUID(),
    taskQueue,
    orderId: 99,
    failureType: 'DoubleCharge',
    failureMessage: 'order 99 was paid twice',
    rootCauseType: null,
    rootCauseMessage: null,
    attempts: null,
    failedAt: new Date(0).toISOString(),
  };
  return worker.runUntil(async () => {
    const handle = await env.client.workflow.start('alertWorkflow', {
      workflowId: `alert-refund-review-${randomUUID()}`,
      taskQueue,
      args: [alert],
      workflowExecutionTimeout: '1 day',
    });
    const delivery = await handle.result();
    return { delivery, deliveries, attempts, alertDescription: await handle.describe() };
  });
}

const ok = { status: 200 };
const sinkDown = { status: 503 };
const slowDown = (seconds: number) => ({
  status: 429,
  headers: { 'retry-after': String(seconds) },
});

describe('failure alerts', () => {
  it('raises exactly one alert for a failed workflow of any type, with its cause and a structured log line', async () => {
    const run = await failAndAlert(() => ok);

    expect(run.reported).toEqual({ delivered: false, skipped: 'reported-to-digest' });
    expect(run.delivery).toEqual({ delivered: true });
    expect(run.deliveries).toHaveLength(1);
    expect(run.deliveries[0]!.alert).toMatchObject<Partial<Alert>>({
      kind: 'failures_opened',
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

  it('keeps trying a rate-limited sink for many attempts, waiting its Retry-After, and delivers once', async () => {
    const run = await deliverDirectly((n) => (n <= 20 ? slowDown(60) : ok));

    expect(run.delivery).toEqual({ delivered: true });
    expect(run.deliveries).toHaveLength(21);
    for (let i = 1; i < run.deliveries.length; i++) {
      const wait = run.deliveries[i]!.at - run.deliveries[i - 1]!.at;
      expect(wait).toBeGreaterThanOrEqual(60_000);
      expect(wait).toBeLessThan(61_500);
    }
    // The server scheduled the attempts: one activity, attempt 21 of at most 25.
    expect(run.attempts).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
  });

  it('gives up after three real failures (rate limits not counted) without failing or blocking anything', async () => {
    // Failures on attempts 2, 4 and 6 (MaxExceptions(3)); rate limits on 1, 3 and 5.
    const run = await deliverDirectly((n) => (n % 2 === 1 ? slowDown(1) : sinkDown));

    expect(run.deliveries).toHaveLength(6);
    expect(run.delivery).toEqual({ delivered: false });
    // The alert workflow completed (it never fails, so it raises no alert of its own)...
    expect(run.alertDescription.status.name).toBe('COMPLETED');
    expect(
      run.alertDescription.closeTime!.getTime() - run.alertDescription.startTime.getTime(),
    ).toBeGreaterThan(5_000);
  });

  it('ends at Tries(25) when the sink only ever rate-limits', async () => {
    const run = await failAndAlert(() => slowDown(1));

    expect(run.deliveries).toHaveLength(25);
    expect(run.delivery).toEqual({ delivered: false });
  });
});
