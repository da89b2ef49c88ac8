import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { EXIT_STUCK, main } from '../../src/cli/ops';
import { findStuckWork, type StuckWork } from '../../src/operator/stuck';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import {
  captureIo,
  cliEnv,
  eventually,
  FULFILMENT_WORKFLOW_TYPE,
  pauseForMaintenance,
  type PaymentStack,
  startPayment,
  startPaymentStack,
  startTestWorkflowWorker,
} from './helpers';
import { badDeployWorkflow, impatientShipmentWorkflow, waitingWorkflow } from './workflows';
import { uniqueEventId as workflowId } from '../support/webhook';

// `ops stuck` on a dev server: running workflows whose work keeps failing, while the warehouse
// answers 503 to every request in this file.
let env: TestWorkflowEnvironment;
let stack: PaymentStack;
let worker: Awaited<ReturnType<typeof startTestWorkflowWorker>>;

beforeAll(async () => {
  env = await createDevServerEnv();
  stack = await startPaymentStack(env);
  stack.warehouse.setMode({ kind: 'unavailable', status: 503 });
  worker = await startTestWorkflowWorker(env, stack);
});

afterAll(async () => {
  await worker?.close();
  await stack?.close();
  await env?.teardown();
});

const stuckFor = (all: StuckWork[], id: string) => all.filter((s) => s.workflowId === id);

/** The one entry `findStuckWork` lists for this workflow, once it lists it. */
const stuckEntry = (id: string) =>
  eventually(async () => {
    const found = stuckFor(await findStuckWork(env.client), id);
    expect(found).toHaveLength(1);
    return found[0]!;
  });

it('lists an activity that the server keeps retrying, from the given attempt on', async () => {
  const waiting = await env.client.workflow.start(waitingWorkflow, {
    taskQueue: worker.taskQueue,
    workflowId: workflowId('waiting'),
  });
  const handle = await env.client.workflow.start(impatientShipmentWorkflow, {
    taskQueue: worker.taskQueue,
    workflowId: workflowId('impatient'),
    args: [{ orderId: 4242 }],
  });

  const entry = await stuckEntry(handle.workflowId);
  expect(entry).toMatchObject({
    type: 'impatientShipmentWorkflow',
    stuckOn: { kind: 'activity', activityType: 'notifyWarehouse' },
    lastFailure: {
      rootCause: { type: 'WarehouseUnavailable', message: 'warehouse answered 503' },
    },
  });
  expect(entry?.attempts).toBeGreaterThanOrEqual(3);

  // A healthy running workflow is not stuck; nor is this one below its attempt count.
  const all = await findStuckWork(env.client, { minAttempts: 10_000 });
  expect(stuckFor(all, handle.workflowId)).toEqual([]);
  expect(stuckFor(all, waiting.workflowId)).toEqual([]);
});

it("lists an order whose warehouse call is retrying, with the server's next attempt time", async () => {
  const payment = await startPayment(env, stack);

  // After the first failed attempt the server waits 10 s (nextRetryDelay): attempt 2 comes next.
  const [entry] = await eventually(async () => {
    const found = stuckFor(await findStuckWork(env.client, { minAttempts: 2 }), payment.workflowId);
    expect(found).toHaveLength(1);
    return found;
  });
  expect(entry).toMatchObject({
    type: FULFILMENT_WORKFLOW_TYPE,
    stuckOn: { kind: 'activity', activityType: 'notifyWarehouse' },
    attempts: 2,
    lastFailure: { rootCause: { type: 'WarehouseUnavailable' } },
  });
  const waitMs = (entry?.nextAttemptAt?.getTime() ?? 0) - Date.now();
  expect(waitMs).toBeGreaterThan(0);
  expect(waitMs).toBeLessThanOrEqual(10_000);
  // Attempt 2 is below the default threshold of 3.
  expect(stuckFor(await findStuckWork(env.client), payment.workflowId)).toEqual([]);

  const io = captureIo({ env: cliEnv(env) });
  expect(await main(['stuck', '--min-attempts', '2', '--type', FULFILMENT_WORKFLOW_TYPE], io)).toBe(
    EXIT_STUCK,
  );
  const lines = io.stdout().split('\n');
  expect(lines).toContain(
    'notifyWarehouse failing with WarehouseUnavailable: 1 run(s) (last: warehouse answered 503)',
  );
  const row = lines.find((l) => l.includes(` ${payment.workflowId} `));
  expect(row).toMatch(
    new RegExp(
      `^ {2}${payment.orderId} +${payment.workflowId} +orderWorkflow +2( of \\d+)? +\\d{4}-\\S+ \\(in \\d+ s\\) +retrying$`,
    ),
  );
});

it('groups stuck work by cause, and marks a paused activity, which has no next retry', async () => {
  const [first, second] = [await startPayment(env, stack), await startPayment(env, stack)];
  await eventually(async () => {
    const found = await findStuckWork(env.client, { minAttempts: 2 });
    expect(stuckFor(found, first.workflowId)).toHaveLength(1);
    expect(stuckFor(found, second.workflowId)).toHaveLength(1);
  });
  const activityId = (await env.client.workflow.getHandle(second.workflowId).describe()).raw
    .pendingActivities![0]!.activityId!;
  await pauseForMaintenance(env, second.workflowId, activityId);

  // Paused below the threshold: still listed, since nothing will run it until someone acts.
  const paused = await eventually(async () => {
    const [entry] = stuckFor(await findStuckWork(env.client), second.workflowId);
    expect(entry).toMatchObject({ paused: true, nextAttemptAt: undefined });
    return entry!;
  });
  expect(paused.orderId).toBe(String(second.orderId));
  expect(stuckFor(await findStuckWork(env.client), first.workflowId)).toEqual([]);

  const io = captureIo({ env: cliEnv(env) });
  expect(await main(['stuck', '--min-attempts', '2', '--type', FULFILMENT_WORKFLOW_TYPE], io)).toBe(
    EXIT_STUCK,
  );
  const lines = io.stdout().split('\n');
  const heading = lines.findIndex((l) =>
    /^notifyWarehouse failing with WarehouseUnavailable: \d+ run\(s\)/.test(l),
  );
  expect(heading).toBeGreaterThanOrEqual(0);
  const group = lines.slice(heading + 1).filter((l) => l.startsWith('  '));
  expect(group.find((l) => l.includes(` ${first.workflowId} `))).toMatch(/ retrying$/);
  expect(group.find((l) => l.includes(` ${second.workflowId} `))).toMatch(
    / - +PAUSED: nothing runs until unpaused$/,
  );
});

it('exits 0 when nothing is stuck', async () => {
  const io = captureIo({ env: cliEnv(env) });
  expect(await main(['stuck', '--type', 'noSuchWorkflow'], io)).toBe(0);
  expect(io.stdout()).toContain('Nothing stuck');
});

it('lists a workflow whose workflow task keeps failing', async () => {
  const handle = await env.client.workflow.start(badDeployWorkflow, {
    taskQueue: worker.taskQueue,
    workflowId: workflowId('bad-deploy'),
  });

  const entry = await stuckEntry(handle.workflowId);
  expect(entry).toMatchObject({
    type: 'badDeployWorkflow',
    stuckOn: { kind: 'workflow task' },
    lastFailure: { message: 'bad deploy: this code cannot run' },
  });
  expect(entry?.attempts).toBeGreaterThan(1);

  const io = captureIo({ env: cliEnv(env) });
  expect(await main(['stuck'], io)).toBe(EXIT_STUCK);
  const lines = io.stdout().split('\n');
  expect(lines.find((l) => l.startsWith('workflow task failing with'))).toContain(
    'bad deploy: this code cannot run',
  );
  expect(lines.find((l) => l.includes(` ${handle.workflowId} `))).toMatch(
    /badDeployWorkflow +\d+ +running now +retrying \(the code throws\)$/,
  );
});
