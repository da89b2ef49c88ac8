import os from 'node:os';
import path from 'node:path';
import { mkdtemp, rm } from 'node:fs/promises';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { temporal } from '@temporalio/proto';
import type { Worker, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { NormalModuleReplacementPlugin } from 'webpack';
import { main as ops } from '../../src/cli/ops';
import { loadConfig } from '../../src/config';
import { paymentWorkflowId } from '../../src/shared/constants';
import { orderWorkflowId } from '../../src/shared/order';
import { WATCHED_TASK_QUEUES } from '../../src/monitoring';
import { describeBuildPollers } from '../../src/monitoring/build-pollers';
import { describeDeployment, waitForBuild } from '../../src/temporal/deployments';
import { buildIdOf, type WorkerDeployment } from '../../src/workers/deployment';
import { createHeavyWorker, heavyActivityDepsFromConfig } from '../../src/workers/heavy';
import { activityDepsFromConfig, createPaymentWorker } from '../../src/workers/payments';
import { prebuilt, workflowBundle } from '../support/bundles';
import { eventually } from '../support/eventually';
import { startPaymentStack, TEST_MAIL_FROM, type PaymentStack } from '../support/stack';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { deliverWebhook } from '../support/webhook';

// A rollout as an operator does it, on the dev server (server 1.29.1, Worker Deployments on):
// build A runs; build B (the payment workflow with a step added) starts beside it; B ramps to
// 20 % of new runs, becomes current while an order of A's is parked in the warehouse's backoff,
// and that order finishes on A's workers once the warehouse is back; A drains; then a rollback
// makes A current again. Which build ran each workflow task is read from the histories.

const DEPLOYMENT = 'order-payments';
const PINNED = temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED;
let env: TestWorkflowEnvironment;
let stack: PaymentStack;
let invoiceDir: string;
const running: Array<{ worker: Worker; run: Promise<void> }> = [];
let buildA: WorkerDeployment;
let buildB: WorkerDeployment;

/** B: the production workflows with ./payment swapped for the fixture that adds a timer. */
function bundleOfBuildB(): Promise<WorkflowBundleWithSourceMap> {
  const changed = require.resolve('./fixtures/payment-after-pause');
  return workflowBundle({
    webpackConfigHook: (config) => {
      config.plugins = [
        ...(config.plugins ?? []),
        new NormalModuleReplacementPlugin(
          /^\.\/payment$/,
          (resource: { context: string; request: string }) => {
            if (resource.context.endsWith(`${path.sep}src${path.sep}workflows`))
              resource.request = changed;
          },
        ),
      ];
      return config;
    },
  });
}

/** The payments and heavy workers of one build, as src/worker.ts and src/heavy-worker.ts run. */
async function startBuild(bundle: WorkflowBundleWithSourceMap): Promise<WorkerDeployment> {
  const deployment = {
    deploymentName: DEPLOYMENT,
    buildId: buildIdOf(bundle.code),
    useWorkerVersioning: true,
  };
  const config = loadConfig({
    NODE_ENV: 'test',
    MAIL_FROM: TEST_MAIL_FROM,
    INVOICE_DIR: invoiceDir,
  });
  const connection = env.nativeConnection;
  const namespace = env.namespace ?? 'default';
  const identity = `build-${deployment.buildId}`;
  const payments = await createPaymentWorker({
    connection,
    namespace,
    deployment,
    activities: activityDepsFromConfig(config, stack.db, {
      warehouseUrl: stack.warehouseUrl,
      temporalUiUrl: undefined,
      smtpUrl: stack.smtp.url,
    }),
    overrides: { ...prebuilt(bundle), identity },
  });
  const heavy = await createHeavyWorker({
    connection,
    namespace,
    deployment,
    activities: heavyActivityDepsFromConfig(config, stack.db, { temporalUiUrl: undefined }),
    overrides: { ...prebuilt(bundle), identity },
  });
  for (const worker of [payments, heavy]) running.push({ worker, run: worker.run() });
  await waitForBuild(env.client, deployment);
  // `deployment current` and `ramp` refuse a build until all four pollers have polled.
  await eventually(async () => {
    const pollers = await describeBuildPollers(
      env.client.connection,
      namespace,
      deployment,
      WATCHED_TASK_QUEUES,
    );
    expect(pollers.missing).toEqual([]);
  });
  return deployment;
}

/** `npm run ops -- deployment <argv>`, as the operator runs it against this server. */
async function operator(...argv: string[]): Promise<{ code: number; out: string }> {
  const lines: string[] = [];
  const code = await ops(['deployment', ...argv], {
    out: (text) => lines.push(text),
    err: (text) => lines.push(text),
    env: { TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace ?? 'default' },
  });
  return { code, out: lines.join('\n') };
}

/** Pays a new order through the webhook; returns the order's ID and the payment's event ID. */
async function pay(eventId: string): Promise<{ orderId: number; eventId: string }> {
  const { order } = await stack.orders.createWithIdempotencyKey({
    userId: 1,
    customerEmail: 'buyer@example.com',
    totalAmount: 100,
  });
  const reply = await deliverWebhook(stack.app, {
    id: eventId,
    event: 'payment.succeeded',
    order_id: order.id,
    amount: 100,
  });
  expect(reply.statusCode).toBe(200);
  return { orderId: order.id, eventId };
}

/**
 * The build that completed each workflow task of a run, and for each activity the build of the
 * worker that ran its last attempt (the history keeps only that attempt's start) and its number.
 */
async function buildsOf(handle: WorkflowHandle) {
  const history = await handle.fetchHistory();
  const tasks: string[] = [];
  const activities: Array<{ build: string; attempt: number }> = [];
  for (const event of history.events ?? []) {
    const completed = event.workflowTaskCompletedEventAttributes;
    if (completed) tasks.push(completed.deploymentVersion?.buildId ?? '(unversioned)');
    const started = event.activityTaskStartedEventAttributes;
    if (started) {
      const build = started.identity?.replace(/^build-/, '') ?? '';
      activities.push({ build, attempt: started.attempt ?? 0 });
    }
  }
  return { tasks, activities };
}

/** The version and behaviour the server keeps for a run. */
async function versioningOf(handle: WorkflowHandle) {
  const info = (await handle.describe()).raw.workflowExecutionInfo?.versioningInfo;
  return { buildId: info?.deploymentVersion?.buildId, behavior: info?.behavior };
}

const handles = {
  payment: (eventId: string) => env.client.workflow.getHandle(paymentWorkflowId(eventId)),
  order: (orderId: number) => env.client.workflow.getHandle(orderWorkflowId(orderId)),
};

beforeAll(async () => {
  invoiceDir = await mkdtemp(path.join(os.tmpdir(), 'rollout-invoices-'));
  env = await createDevServerEnv();
  stack = await startPaymentStack(env, { worker: false, startTimeoutMs: 10_000 });
}, 120_000);

afterAll(async () => {
  for (const { worker } of running) worker.shutdown();
  await Promise.allSettled(running.map((r) => r.run));
  await stack?.close();
  await env?.teardown();
  await rm(invoiceDir, { recursive: true, force: true });
});

describe('a rollout with Worker Versioning, build A to build B', () => {
  it('B beside A: a 20 % ramp, B current while A finishes its parked order, A drained, then rolled back', async () => {
    const [bundleA, bundleB] = await Promise.all([workflowBundle(), bundleOfBuildB()]);
    expect(buildIdOf(bundleA.code)).not.toBe(buildIdOf(bundleB.code));
    buildA = await startBuild(bundleA);
    expect(await operator('current', buildA.buildId)).toMatchObject({ code: 0 });
    buildB = await startBuild(bundleB);

    // Ramp: 20 % of new runs to B, by a hash of the workflow ID (fixed IDs: the same split every
    // time). The rest go to A, the current build.
    expect(await operator('ramp', buildB.buildId, '20')).toMatchObject({ code: 0 });
    const ramped = [];
    for (let i = 0; i < 30; i++) ramped.push(await pay(`evt_ramp_${i}`));
    const onB: string[] = [];
    for (const { eventId, orderId } of ramped) {
      await handles.payment(eventId).result();
      await handles.order(orderId).result();
      const { buildId, behavior } = await versioningOf(handles.payment(eventId));
      expect(behavior).toBe(PINNED);
      if (buildId === buildB.buildId) onB.push(eventId);
      else expect(buildId).toBe(buildA.buildId);
    }
    expect(onB.length).toBeGreaterThanOrEqual(2);
    expect(onB.length).toBeLessThanOrEqual(14);

    // The warehouse goes down; an order started on A is parked in its retry backoff.
    stack.warehouse.setMode({ kind: 'unavailable', status: 503 });
    const parked = await pay('evt_parked_on_a');
    await eventually(async () => {
      const pending = (await handles.order(parked.orderId).describe()).raw.pendingActivities;
      expect(pending?.[0]?.attempt).toBeGreaterThanOrEqual(2);
    });
    expect((await versioningOf(handles.order(parked.orderId))).buildId).toBe(buildA.buildId);

    // B becomes current (the ramp ends with it): new runs go to B, the parked one stays on A.
    expect(await operator('current', buildB.buildId)).toMatchObject({ code: 0 });
    const state = await describeDeployment(env.client, DEPLOYMENT);
    expect(state).toMatchObject({ current: buildB.buildId, ramping: undefined });
    // The drain check keeps A's workers running: its parked order is open.
    expect(await operator('drain', buildA.buildId)).toEqual({
      code: 1,
      out: expect.stringMatching(/open run\(s\) pinned to it/),
    });
    const fresh = await pay('evt_new_on_b');
    await handles.payment(fresh.eventId).result();
    expect((await versioningOf(handles.payment(fresh.eventId))).buildId).toBe(buildB.buildId);

    // The warehouse is back: each order finishes on the build that started it.
    stack.warehouse.setMode({ kind: 'ok' });
    await handles.order(parked.orderId).result();
    await handles.order(fresh.orderId).result();
    const parkedRun = await buildsOf(handles.order(parked.orderId));
    expect(new Set(parkedRun.tasks)).toEqual(new Set([buildA.buildId]));
    // The warehouse call (its attempt after the 503s) and the mail, both on A's worker.
    expect(parkedRun.activities).toEqual([
      { build: buildA.buildId, attempt: expect.any(Number) },
      { build: buildA.buildId, attempt: 1 },
    ]);
    expect(parkedRun.activities[0]!.attempt).toBeGreaterThanOrEqual(2);
    expect(new Set((await buildsOf(handles.order(fresh.orderId))).tasks)).toEqual(
      new Set([buildB.buildId]),
    );
    // B's payment histories carry B's added step; A's do not.
    const timers = async (eventId: string) =>
      (await handles.payment(eventId).fetchHistory()).events?.filter(
        (e) => e.timerStartedEventAttributes,
      ).length;
    expect(await timers(fresh.eventId)).toBe(1);
    expect(await timers(parked.eventId)).toBe(0);
    expect(await stack.orders.findById(parked.orderId)).toMatchObject({
      shipmentStatus: 'requested',
    });

    // Drain check: once A has no open run (the parked order and its invoice are done), its
    // workers may stop.
    await eventually(async () =>
      expect(await operator('drain', buildA.buildId)).toEqual({
        code: 0,
        out: expect.stringContaining('drained'),
      }),
    );
    const described = await operator('describe');
    expect(described.out).toContain(`current ${buildB.buildId}, ramping none`);
    expect(described.out).toMatch(
      new RegExp(`${buildA.buildId} +\\w+ +- +0 .* payments 1/1, heavy 1/1$`, 'm'),
    );

    // Rollback: A current again; a new run goes to A.
    expect(await operator('current', buildA.buildId)).toMatchObject({ code: 0 });
    const back = await pay('evt_after_rollback');
    await handles.payment(back.eventId).result();
    await handles.order(back.orderId).result();
    expect((await versioningOf(handles.payment(back.eventId))).buildId).toBe(buildA.buildId);
    expect(new Set((await buildsOf(handles.order(back.orderId))).tasks)).toEqual(
      new Set([buildA.buildId]),
    );
  }, 240_000);
});
