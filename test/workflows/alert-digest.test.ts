import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { WorkflowNotFoundError } from '@temporalio/client';
import { MockActivityEnvironment, type TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createAlertActivities } from '../../src/activities/alert-activities';
import { createAlertDigestActivities } from '../../src/activities/alert-digest-activities';
import {
  alertDigestWorkflowId,
  DEFAULT_DIGEST_TIMING,
  digestPostWorkflowId,
  type Alert,
} from '../../src/shared/alert';
import { startAlertSink, type AlertSink } from '../support/alert-sink';
import { sdkLogEntries } from '../support/sdk-logs';
import { createDevServerEnv, createTimeSkippingEnv } from '../../harness/temporal/test-env';
import { bundledWorker, workflowBundle } from '../support/bundles';

// Issue 27 point 3: failures of one cause are one "opened" post, one digest per window and one
// "resolved" post, at a sink that keeps one alert per Idempotency-Key (as Slack does not, the
// raw requests are counted too). Each test has causes of its own.
let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;
let sink: AlertSink;

beforeAll(async () => {
  bundle = await workflowBundle({ workflowsPath: require.resolve('./fixtures/workflows') });
  sink = await startAlertSink({ now: () => env.currentTimeMs(), keyRequired: true });
});
afterAll(async () => {
  await sink?.close();
});
// A fresh test server per test: after some runs the Java test server stops skipping time for
// the next ones (see payment.test.ts).
beforeEach(async () => {
  env = await createTimeSkippingEnv();
});
afterEach(async () => {
  await env?.teardown();
});

/** A failed run's alert, as the failure interceptor describes it. */
function failure(cause: string, orderId: number, failedAt: number): Alert {
  return {
    kind: 'workflow_failed',
    namespace: 'default',
    workflowType: 'orderWorkflow',
    workflowId: `order-${orderId}`,
    runId: randomUUID(),
    taskQueue: 'payments',
    orderId,
    failureType: 'FulfilmentFailed',
    failureMessage: `order ${orderId} could not be handed to the warehouse`,
    rootCauseType: cause,
    rootCauseMessage: 'warehouse answered 503',
    attempts: 5,
    failedAt: new Date(failedAt).toISOString(),
  };
}

/** The result of a workflow that a signal is about to start (the digest or one of its posts). */
async function resultOf(workflowId: string): Promise<unknown> {
  for (let tries = 0; ; tries++) {
    try {
      return await env.client.workflow.getHandle(workflowId).result();
    } catch (err) {
      if (!(err instanceof WorkflowNotFoundError) || tries >= 100) throw err;
      await delay(100);
    }
  }
}

const postsOf = (cause: string) => sink.keptUnder(`${alertDigestWorkflowId(cause)}-`);
const requestsOf = (cause: string) => sink.receivedUnder(`${alertDigestWorkflowId(cause)}-`);

it('posts 500 failures of one cause at most three times, and a new cause within 60 s', async () => {
  const storm = `WarehouseUnavailable${randomUUID().slice(0, 8)}`;
  const other = `WarehouseRejected${randomUUID().slice(0, 8)}`;
  const taskQueue = `digest-${randomUUID()}`;
  let retried = false;
  const digestActivities = createAlertDigestActivities({ client: env.client });
  const worker = await bundledWorker(env, bundle, taskQueue, {
    ...createAlertActivities({ alertWebhookUrl: sink.url, temporalUiUrl: 'http://ui.test' }),
    ...digestActivities,
    // The 500 runs are not real workflows: they count as failed until the test retries them.
    stillFailedRuns: async ({ runs }: { runs: unknown[] }) => (retried ? 0 : runs.length),
  });
  const reporter = new MockActivityEnvironment({ taskQueue });
  const report = (alert: Alert) =>
    reporter.run((a: Alert) => digestActivities.reportFailure(a), alert);

  await worker.runUntil(async () => {
    const start = await env.currentTimeMs();
    const failures = Array.from({ length: 500 }, (_, i) => failure(storm, 70_000 + i, start));
    for (const alert of failures) await report(alert);
    // A crashed reportFailure reports its run again: still one failure.
    await report(failures[0]!);
    const first = failures[0]!;
    const openedId = digestPostWorkflowId(storm, first.runId, 'opened');
    await resultOf(openedId);

    const otherReportedAt = await env.currentTimeMs();
    const otherFailure = failure(other, 79_999, otherReportedAt);
    await report(otherFailure);
    await resultOf(digestPostWorkflowId(other, otherFailure.runId, 'opened'));
    const [otherOpened] = postsOf(other);
    expect(otherOpened!.at - otherReportedAt).toBeLessThan(60_000);

    // One window on: the 499 later failures in one digest.
    await env.sleep(DEFAULT_DIGEST_TIMING.windowMs);
    await resultOf(digestPostWorkflowId(storm, first.runId, { digest: 1 }));
    // An operator retries them; the next check resolves the incident and ends the digest.
    retried = true;
    await resultOf(alertDigestWorkflowId(storm));

    const posts = postsOf(storm);
    expect(requestsOf(storm)).toHaveLength(posts.length);
    expect(posts.map((p) => p.body.alert.kind)).toEqual([
      'failures_opened',
      'failures_digest',
      'failures_resolved',
    ]);
    const command = `npm run ops -- retry all --root-cause ${storm} --since ${first.failedAt}`;
    for (const post of posts) {
      expect(post.body.alert.command).toBe(command);
      expect(post.body.text).toContain(command);
      expect(post.body.alert.web_ui_url).toMatch(
        /^http:\/\/ui\.test\/namespaces\/default\/workflows\?query=/,
      );
    }
    const [opened, digest, resolved] = posts.map((p) => p.body.alert);
    expect(opened).toMatchObject({ order_id: 70_000, digest: { failures: 1 } });
    expect(digest).toMatchObject({
      order_id: null,
      digest: { failures: 500, new_failures: 499, more_orders: 480, still_failed: 500 },
    });
    expect((digest!.digest as { order_ids: number[] }).order_ids).toHaveLength(20);
    expect(resolved).toMatchObject({
      order_id: null,
      digest: { failures: 500, still_failed: 0, resolved_by: 'retried' },
    });
  });
});

it('resolves an incident whose cause went quiet, and opens a new one for its next failure', async () => {
  const cause = `StripeDown${randomUUID().slice(0, 8)}`;
  const taskQueue = `digest-${randomUUID()}`;
  const digestActivities = createAlertDigestActivities({ client: env.client });
  const worker = await bundledWorker(env, bundle, taskQueue, {
    ...createAlertActivities({ alertWebhookUrl: sink.url, temporalUiUrl: undefined }),
    ...digestActivities,
    stillFailedRuns: async ({ runs }: { runs: unknown[] }) => runs.length,
  });
  const reporter = new MockActivityEnvironment({ taskQueue });
  await worker.runUntil(async () => {
    const first = failure(cause, 81_000, await env.currentTimeMs());
    await reporter.run((a: Alert) => digestActivities.reportFailure(a), first);
    await resultOf(alertDigestWorkflowId(cause));
    const quietFor = (await env.currentTimeMs()) - Date.parse(first.failedAt);
    expect(quietFor).toBeGreaterThanOrEqual(DEFAULT_DIGEST_TIMING.quietMs);

    const again = failure(cause, 81_001, await env.currentTimeMs());
    await reporter.run((a: Alert) => digestActivities.reportFailure(a), again);
    await resultOf(digestPostWorkflowId(cause, again.runId, 'opened'));
  });

  const posts = postsOf(cause).map((p) => [p.key, p.body.alert.kind, p.body.alert.digest]);
  expect(posts).toEqual([
    [expect.stringContaining('-opened'), 'failures_opened', expect.anything()],
    [
      expect.stringContaining('-resolved'),
      'failures_resolved',
      expect.objectContaining({ failures: 1, still_failed: 1, resolved_by: 'quiet' }),
    ],
    // The next incident's posts have keys of their own: a sink that honours keys keeps them.
    [expect.stringContaining('-opened'), 'failures_opened', expect.anything()],
  ]);
});

it('digests real failed runs in log-only mode with link and command, across continue-as-new, resolved once retried', async () => {
  // A dev server: after a failed workflow the test server stops skipping time (see
  // payment.test.ts), and a real server suggests continue-as-new when told to.
  const dev = await createDevServerEnv({ suggestContinueAsNewAfterEvents: 40 });
  const taskQueue = `digest-${randomUUID()}`;
  const timing = { windowMs: 1_000, quietMs: 120_000 };
  const digestActivities = createAlertDigestActivities({ client: dev.client, timing });
  const ids = [0, 1, 2].map(() => `failing-${randomUUID()}`);
  try {
    const worker = await bundledWorker(dev, bundle, taskQueue, {
      ...createAlertActivities({ alertWebhookUrl: undefined, temporalUiUrl: 'http://ui.test/' }),
      ...digestActivities,
    });
    await worker.runUntil(async () => {
      for (const [i, workflowId] of ids.entries()) {
        const handle = await dev.client.workflow.start('alwaysFailingWorkflow', {
          workflowId,
          taskQueue,
          args: [{ orderId: 90 + i }],
          workflowExecutionTimeout: '1 hour',
        });
        await expect(handle.result()).rejects.toThrow();
      }
      // Failures of runs that no longer exist (deleted by ops flush) count, but never block.
      const reporter = new MockActivityEnvironment({ taskQueue });
      for (let i = 0; i < 60; i++) {
        await reporter.run((a: Alert) => digestActivities.reportFailure(a), {
          ...failure('TestFailure', 95_000 + i, Date.now()),
          rootCauseType: null,
          failureType: 'TestFailure',
        });
      }
      const digestId = alertDigestWorkflowId('TestFailure');
      await waitFor(
        async () => (await dev.client.workflow.count(`WorkflowId="${digestId}"`)).count > 1,
      );
      // The retries: each workflow ID's latest run completes.
      for (const [i, workflowId] of ids.entries()) {
        await dev.client.workflow.execute('succeedingWorkflow', {
          workflowId,
          taskQueue,
          args: [{ orderId: 90 + i }],
        });
      }
      await dev.client.workflow.getHandle(digestId).result();
    });
  } finally {
    await dev.teardown();
  }

  const ofThese = sdkLogEntries().filter(
    (e) => e.message.startsWith('alert (log only') && String(e.meta?.text).includes('TestFailure'),
  );
  // The window is one second here: the 60 reports may straddle a check, hence one digest or two.
  const kinds = ofThese.map((e) => e.meta?.kind as string);
  expect(kinds[0]).toBe('failures_opened');
  expect(kinds.at(-1)).toBe('failures_resolved');
  expect(new Set(kinds.slice(1, -1))).toEqual(new Set(['failures_digest']));
  for (const entry of ofThese) {
    expect(entry.meta?.command).toMatch(
      /^npm run ops -- retry all --root-cause TestFailure --since /,
    );
    expect(entry.meta?.web_ui_url).toMatch(
      /^http:\/\/ui\.test\/namespaces\/default\/workflows\?query=/,
    );
    expect(String(entry.meta?.text)).toContain(String(entry.meta?.command));
  }
  expect(ofThese.at(-1)!.meta?.digest).toMatchObject({ failures: 63, resolved_by: 'retried' });
  // Each failed run's own log line names the command that retries it alone.
  for (const workflowId of ids) {
    const line = sdkLogEntries().find(
      (e) => e.message === 'workflow failed' && e.meta?.workflowId === workflowId,
    );
    expect(line?.meta?.command).toBe(`npm run ops -- retry ${workflowId}`);
  }
});

async function waitFor(probe: () => Promise<boolean>): Promise<void> {
  for (let tries = 0; tries < 300; tries++) {
    if (await probe()) return;
    await delay(100);
  }
  throw new Error('not within 30 s');
}
