import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { temporal } from '@temporalio/proto';
import { main as ops } from '../../src/cli/ops';
import { paymentWorkflowId } from '../../src/shared/constants';
import { orderWorkflowId } from '../../src/shared/order';
import { describeDeployment } from '../../src/temporal/deployments';
import { buildIdOf, type WorkerDeployment } from '../../src/workers/deployment';
import {
  bundlesOfBuildsAandB,
  startDeploymentBuilds,
  type DeploymentBuilds,
} from '../support/deployment-builds';
import { eventually } from '../support/eventually';
import type { PaymentStack } from '../support/stack';

// A rollout as an operator does it, on the dev server (server 1.29.1, Worker Deployments on):
// build A runs; build B (the payment workflow with a step added) starts beside it; B ramps to
// 20 % of new runs, becomes current while an order of A's is parked in the warehouse's backoff,
// and that order finishes on A's workers once the warehouse is back; A drains; then a rollback
// makes A current again. Which build ran each workflow task is read from the histories.

const PINNED = temporal.api.enums.v1.VersioningBehavior.VERSIONING_BEHAVIOR_PINNED;
let env: TestWorkflowEnvironment;
let stack: PaymentStack;
let builds: DeploymentBuilds;
let buildA: WorkerDeployment;
let buildB: WorkerDeployment;

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
  builds = await startDeploymentBuilds();
  ({ env, stack } = builds);
}, 120_000);

afterAll(async () => {
  await builds?.close();
});

describe('a rollout with Worker Versioning, build A to build B', () => {
  it('B beside A: a 20 % ramp, B current while A finishes its parked order, A drained, then rolled back', async () => {
    const [bundleA, bundleB] = await bundlesOfBuildsAandB();
    expect(buildIdOf(bundleA.code)).not.toBe(buildIdOf(bundleB.code));
    buildA = await builds.start(bundleA);
    expect(await operator('current', buildA.buildId)).toMatchObject({ code: 0 });
    buildB = await builds.start(bundleB);

    // Ramp: 20 % of new runs to B, by a hash of the workflow ID (fixed IDs: the same split every
    // time). The rest go to A, the current build.
    expect(await operator('ramp', buildB.buildId, '20')).toMatchObject({ code: 0 });
    const ramped = [];
    for (let i = 0; i < 30; i++) ramped.push(await builds.pay(`evt_ramp_${i}`));
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
    const parked = await builds.pay('evt_parked_on_a');
    await eventually(async () => {
      const pending = (await handles.order(parked.orderId).describe()).raw.pendingActivities;
      expect(pending?.[0]?.attempt).toBeGreaterThanOrEqual(2);
    });
    expect((await versioningOf(handles.order(parked.orderId))).buildId).toBe(buildA.buildId);

    // B becomes current (the ramp ends with it): new runs go to B, the parked one stays on A.
    expect(await operator('current', buildB.buildId)).toMatchObject({ code: 0 });
    const state = await describeDeployment(env.client, builds.deploymentName);
    expect(state).toMatchObject({ current: buildB.buildId, ramping: undefined });
    // The drain check keeps A's workers running: its parked order is open.
    expect(await operator('drain', buildA.buildId)).toEqual({
      code: 1,
      out: expect.stringMatching(/open run\(s\) pinned to it/),
    });
    const fresh = await builds.pay('evt_new_on_b');
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
    const back = await builds.pay('evt_after_rollback');
    await handles.payment(back.eventId).result();
    await handles.order(back.orderId).result();
    expect((await versioningOf(handles.payment(back.eventId))).buildId).toBe(buildA.buildId);
    expect(new Set((await buildsOf(handles.order(back.orderId))).tasks)).toEqual(
      new Set([buildA.buildId]),
    );
  }, 240_000);
});
