import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { createActivities } from '../../src/activities';
import type { CliIo } from '../../src/cli/ops';
import { loadConfig } from '../../src/config';
import {
  createOrdersRepository,
  createPaymentsRepository,
  type OrdersRepository,
  type PaymentsRepository,
} from '../../src/db';
import { paymentWorkflowId } from '../../src/shared/constants';
import { orderWorkflowId } from '../../src/shared/order';
import { createPaymentStarter, type PaymentStarter } from '../../src/temporal/payment-starter';
import { startSmtpSink, type SmtpSink } from '../../dev/partners/smtp-sink';
import {
  createWarehouseSimulator,
  type WarehouseSimulator,
} from '../../dev/partners/warehouse-simulator';
import { activityDepsFromConfig, createPaymentWorker } from '../../src/workers/payments';
import { testDatabases, type TestDatabaseHandle } from '../support/databases';
import { uniqueEventId } from '../support/webhook';
import { createStepActivities } from './step-activities';

/**
 * Retries `check` (an assertion) every `intervalMs` until it passes, for what the dev server
 * makes visible eventually (visibility, deletions). Fails with the last assertion error.
 */
export async function eventually<T>(
  check: () => Promise<T>,
  { timeoutMs = 20_000, intervalMs = 100 } = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await delay(intervalMs);
    }
  }
}

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

/** The environment the CLI reads to reach the test's dev server. */
export function cliEnv(env: TestWorkflowEnvironment): NodeJS.ProcessEnv {
  return { TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace ?? 'default' };
}

/**
 * The real payment stack on a dev server: the payment worker on task queue `payments` with the
 * production workflows and activities over a fresh SQLite database, the warehouse simulator, and
 * the webhook's starter.
 */
export interface PaymentStack {
  db: TestDatabaseHandle;
  orders: OrdersRepository;
  payments: PaymentsRepository;
  warehouse: WarehouseSimulator;
  warehouseUrl: string;
  smtp: SmtpSink;
  starter: PaymentStarter;
  close(): Promise<void>;
}

export async function startPaymentStack(
  env: TestWorkflowEnvironment,
  /** Settings of the worker beyond the defaults, e.g. `ALERT_WEBHOOK_URL` of a local sink. */
  settings: NodeJS.ProcessEnv = {},
): Promise<PaymentStack> {
  const sqlite = testDatabases.find((d) => d.name === 'sqlite');
  if (!sqlite) throw new Error('no sqlite test database');
  const db = await sqlite.create();
  const warehouse = createWarehouseSimulator();
  const warehouseUrl = await warehouse.listen(0);
  const smtp = await startSmtpSink();
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  try {
    worker = await createPaymentWorker({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      activities: activityDepsFromConfig(loadConfig({ NODE_ENV: 'test', ...settings }), db, {
        warehouseUrl,
        temporalUiUrl: undefined,
        smtpUrl: smtp.url,
      }),
    });
    running = worker.run();
  } catch (err) {
    await smtp.close();
    await warehouse.close();
    await db.close();
    throw err;
  }
  return {
    db,
    orders: createOrdersRepository(db.db),
    payments: createPaymentsRepository(db.db),
    warehouse,
    warehouseUrl,
    smtp,
    starter: createPaymentStarter(env.client, { startTimeoutMs: 5000 }),
    async close() {
      worker?.shutdown();
      await running;
      await smtp.close();
      await warehouse.close();
      await db.close();
    },
  };
}

/**
 * A worker for the test-only workflows in ./workflows.ts on a task queue of its own, with the
 * production activities (warehouse calls go to the stack's simulator) and the step activities.
 */
export async function startTestWorkflowWorker(
  env: TestWorkflowEnvironment,
  stack: Pick<PaymentStack, 'db' | 'warehouseUrl' | 'smtp'>,
) {
  const steps = createStepActivities();
  const taskQueue = `ops-test-${randomUUID()}`;
  const worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    workflowsPath: require.resolve('./workflows'),
    activities: {
      ...createActivities({
        ...activityDepsFromConfig(loadConfig({ NODE_ENV: 'test' }), stack.db, {
          warehouseUrl: stack.warehouseUrl,
          temporalUiUrl: undefined,
          smtpUrl: stack.smtp.url,
        }),
        client: env.client,
      }),
      ...steps.activities,
    },
  });
  const running = worker.run();
  return {
    taskQueue,
    steps,
    async close() {
      worker.shutdown();
      await running;
    },
  };
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
  const created = await stack.orders.createWithIdempotencyKey({
    userId: 1,
    customerEmail: 'buyer@example.com',
    totalAmount: 5400,
  });
  const orderId = created.order.id;
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
