import type { SmtpSink } from '../../harness/partners/smtp-sink';
import { WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { listFailedWorkflows } from '../../src/operator/failed-workflows';
import { findResetPoint } from '../../src/operator/reset-point';
import { retryFailedWorkflow } from '../../src/operator/retry';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { eventually, startTestWorkflowWorker } from './helpers';
import { main } from '../../src/cli/ops';
import { captureIo, cliEnv } from './helpers';
import { chargeWorkflow, invalidInputWorkflow, orderWorkflow, paymentWorkflow } from './workflows';
import { uniqueEventId as workflowId } from '../support/webhook';

// Where `ops retry` resets a failed run to, on histories the payment workflow does not produce:
// a failure wrapped around a step whose retries ran out with a failed compensation after it, and
// a failure of the workflow code with no activity in its cause chain.
let env: TestWorkflowEnvironment;
let db: TestDatabaseHandle;
let worker: Awaited<ReturnType<typeof startTestWorkflowWorker>>;

beforeAll(async () => {
  env = await createDevServerEnv();
  db = await testDatabases.find((d) => d.name === 'sqlite')!.create();
  // No warehouse call in these workflows; the URL only completes the production activity deps.
  worker = await startTestWorkflowWorker(env, {
    db,
    warehouseUrl: 'http://127.0.0.1:9',
    smtp: { url: 'smtp://127.0.0.1:9' } as SmtpSink,
  });
});

afterAll(async () => {
  await worker?.close();
  await db?.close();
  await env?.teardown();
});

async function failedRun(
  workflow:
    | typeof chargeWorkflow
    | typeof invalidInputWorkflow
    | typeof paymentWorkflow
    | typeof orderWorkflow,
) {
  const handle = await env.client.workflow.start(workflow, {
    taskQueue: worker.taskQueue,
    workflowId: workflowId(workflow.name),
    workflowExecutionTimeout: '1 minute',
  });
  await expect(handle.result()).rejects.toBeInstanceOf(WorkflowFailedError);
  const history = await handle.fetchHistory();
  return { handle, events: history.events ?? [] };
}

it('follows the cause chain to the failed step, not the compensation that failed after it', async () => {
  const { handle, events } = await failedRun(chargeWorkflow);
  // The compensation ran and failed after the charge: "the last failed activity" is the refund.
  expect(worker.steps.calls).toMatchObject({ prepare: 1, charge: 1, refund: 1 });

  const point = findResetPoint(events);
  expect(point).toMatchObject({ kind: 'activity', activityType: 'charge' });
  const scheduledCharge = events.find(
    (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'charge',
  )?.activityTaskScheduledEventAttributes;
  expect(point?.eventId.toString()).toBe(scheduledCharge?.workflowTaskCompletedEventId?.toString());

  // Retried once the card works: the step runs again with a fresh retry policy; what came before
  // it (prepare) and the compensation after it are not run again.
  worker.steps.state.chargeFails = false;
  const retried = await retryFailedWorkflow(env.client, handle.workflowId, { reason: 'test' });
  expect(retried.resetPoint).toEqual(point);
  const result = await env.client.workflow.getHandle(handle.workflowId, retried.newRunId).result();
  expect(result).toBe('charged');
  expect(worker.steps.calls).toMatchObject({ prepare: 1, charge: 2, refund: 1 });
});

it('starts over from the first workflow task when the workflow code itself failed', async () => {
  const { handle, events } = await failedRun(invalidInputWorkflow);
  const prepared = worker.steps.calls.prepare;

  const point = findResetPoint(events);
  const firstTask = events.find((e) => e.workflowTaskCompletedEventAttributes);
  expect(point).toEqual({ kind: 'start', eventId: firstTask?.eventId, rerun: ['prepare'] });

  const retried = await retryFailedWorkflow(env.client, handle.workflowId, { reason: 'test' });
  await expect(
    env.client.workflow.getHandle(handle.workflowId, retried.newRunId).result(),
  ).rejects.toBeInstanceOf(WorkflowFailedError);
  // Everything ran again, and the inbox now shows the new failed run.
  expect(worker.steps.calls.prepare).toBe(prepared + 1);
  await eventually(async () => {
    const listed = await listFailedWorkflows(env.client, { workflowType: 'invalidInputWorkflow' });
    expect(listed.find((w) => w.workflowId === handle.workflowId)?.runId).toBe(retried.newRunId);
  });
});

it("records the operator's reason on the reset", async () => {
  const { handle } = await failedRun(invalidInputWorkflow);
  const retried = await retryFailedWorkflow(env.client, handle.workflowId, {
    reason: 'ops retry by alice',
  });
  const history = await env.client.workflow
    .getHandle(handle.workflowId, retried.newRunId)
    .fetchHistory();
  const resetFailure = history.events
    ?.map((e) => e.workflowTaskFailedEventAttributes?.failure)
    .find((f) => f?.resetWorkflowFailureInfo);
  expect(resetFailure?.message).toBe('ops retry by alice');
});

it.each([
  { workflow: paymentWorkflow, message: 'nothing was done: the new run found payment 1 recorded' },
  {
    workflow: orderWorkflow,
    message: 'nothing was done: the new run completed without processing event (any)',
  },
])(
  'exits 1 and says so when a retried $workflow.name completes without doing the work',
  async ({ workflow, message }) => {
    worker.steps.state.chargeFails = true;
    const { handle } = await failedRun(workflow);
    worker.steps.state.chargeFails = false;

    const io = captureIo({ env: cliEnv(env) });
    expect(await main(['retry', handle.workflowId], io)).toBe(1);
    expect(io.stdout()).toMatch(/New run: \S+/);
    expect(io.stderr()).toContain(`Outcome: ${message}`);
  },
);
