import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities } from '../../src/activities';
import { EXIT_USAGE, main, type CliIo } from '../../src/cli/ops';
import { loadConfig } from '../../src/config';
import { paymentWorkflowId } from '../../src/shared/constants';
import { orderWorkflowId } from '../../src/shared/order';
import { activityDepsFromConfig } from '../../src/workers/payments';
import type { PaymentStack } from '../support/stack';
import { uniqueEventId } from '../support/webhook';
import { createStepActivities } from './step-activities';
import { createTestOrder } from '../support/orders';
import { runUntilStopped } from '../support/workers';

export { eventually } from '../support/eventually';

export interface CapturedIo extends CliIo {
  stdout(): string;
  stderr(): string;
}

/** A CliIo that records what the CLI prints; non-interactive unless told otherwise. */
export function captureIo(overrides: Partial<CliIo> = {}): CapturedIo {
  const out: string[] = [];
  const err: string[] = [];
  return {
    out: (text) => out.push(text),
    err: (text) => err.push(text),
    interactive: false,
    ask: () => Promise.reject(new Error('the CLI asked a question in a non-interactive test')),
    user: 'tester',
    stdout: () => out.join('\n'),
    stderr: () => err.join('\n'),
    ...overrides,
  };
}

/** Runs the ops CLI on `argv` with a captured io: its exit code and what it printed. */
export async function runCli(argv: string[], overrides: Partial<CliIo> = {}) {
  const io = captureIo(overrides);
  const code = await main(argv, io);
  return { code, stdout: io.stdout(), stderr: io.stderr() };
}

/** A usage error: exit code 2 and `message` on stderr, nothing on stdout (so nothing sent). */
export function expectUsageError(result: Awaited<ReturnType<typeof runCli>>, message: string) {
  expect(result.code).toBe(EXIT_USAGE);
  expect(result.stderr).toContain(message);
  expect(result.stdout).toBe('');
}

/** The environment the CLI reads to reach the test's dev server. */
export function cliEnv(env: TestWorkflowEnvironment): NodeJS.ProcessEnv {
  return { TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace ?? 'default' };
}

export { startPaymentStack, type PaymentStack } from '../support/stack';

/**
 * A worker for the test-only workflows in ./workflows.ts on a task queue of its own, with the
 * production activities (warehouse calls go to the stack's simulator) and the step activities.
 */
export async function startTestWorkflowWorker(
  env: TestWorkflowEnvironment,
  stack: Pick<PaymentStack, 'db' | 'warehouseUrl' | 'smtp'>,
) {
  const steps = createStepActivities();
  const worker = await runTestWorkflows(env, {
    ...createActivities({
      ...activityDepsFromConfig(loadConfig({ NODE_ENV: 'test' }), stack.db, {
        warehouseUrl: stack.warehouseUrl,
        temporalUiUrl: undefined,
        smtpUrl: stack.smtp.url,
      }),
      client: env.client,
    }),
    ...steps.activities,
  });
  return { ...worker, steps };
}

/** A worker of the test-only workflows in ./workflows.ts on a task queue of its own. */
export async function runTestWorkflows(
  env: TestWorkflowEnvironment,
  activities: WorkerOptions['activities'],
  options: Partial<WorkerOptions> = {},
) {
  const taskQueue = `ops-test-${randomUUID()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    workflowsPath: require.resolve('./workflows'),
    activities,
    ...options,
  });
  return { taskQueue, close: runUntilStopped(worker).stop };
}

/**
 * The workflow that fulfils a paid order, and so the one that ends Failed when the warehouse
 * refuses: the order's entity workflow, fed by the payment workflow (src/workflows/order.ts).
 */
export const FULFILMENT_WORKFLOW_TYPE = 'orderWorkflow';

export interface StartedPayment {
  orderId: number;
  eventId: string;
  paymentWorkflowId: string;
  /** The workflow that fulfils the order: what the inbox lists when fulfilment fails. */
  workflowId: string;
}

/** Creates an order and starts the payment workflow for it, as the webhook does. */
export async function startPayment(
  env: TestWorkflowEnvironment,
  stack: PaymentStack,
): Promise<StartedPayment> {
  const created = await createTestOrder(stack.orders);
  const orderId = created.id;
  const eventId = uniqueEventId('ops');
  const started = await stack.starter.start({ eventId, orderId, amount: 5400 });
  expect(started).toEqual({ workflowId: paymentWorkflowId(eventId), duplicate: false });
  // The payment workflow records the payment and hands it to the order's workflow.
  await expect(env.client.workflow.getHandle(started.workflowId).result()).resolves.toMatchObject({
    created: true,
  });
  return {
    orderId,
    eventId,
    paymentWorkflowId: started.workflowId,
    workflowId: orderWorkflowId(orderId),
  };
}

/** A paid order that is fulfilled: shipment requested. */
export async function completedPayment(
  env: TestWorkflowEnvironment,
  stack: PaymentStack,
): Promise<StartedPayment> {
  const payment = await startPayment(env, stack);
  await env.client.workflow.getHandle(payment.workflowId).result();
  expect(await stack.orders.findById(payment.orderId)).toMatchObject({
    shipmentStatus: 'requested',
  });
  return payment;
}

/** A paid order whose fulfilment ends Failed: the warehouse rejects its one request (400). */
export async function failedPayment(
  env: TestWorkflowEnvironment,
  stack: PaymentStack,
): Promise<StartedPayment> {
  stack.warehouse.setMode({ kind: 'reject', status: 400 }, 1);
  const payment = await startPayment(env, stack);
  await expect(env.client.workflow.getHandle(payment.workflowId).result()).rejects.toBeInstanceOf(
    WorkflowFailedError,
  );
  return payment;
}

/** Requests the warehouse received for one order, whatever it answered. */
export function warehouseRequestsFor(stack: PaymentStack, orderId: number) {
  return stack.warehouse.requests.filter((r) => r.orderId === orderId);
}

/**
 * Pauses a run's pending activity as the on-call operator does for a warehouse outage: the
 * server runs no further attempt of it until someone unpauses or resets it.
 */
export async function pauseForMaintenance(
  env: TestWorkflowEnvironment,
  workflowId: string,
  activityId: string,
): Promise<void> {
  await env.client.workflowService.pauseActivity({
    namespace: env.namespace ?? 'default',
    execution: { workflowId },
    id: activityId,
    identity: 'on-call',
    reason: 'warehouse maintenance',
  });
}
