import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { createActivities } from '../../src/activities';
import type { DatabaseHandle } from '../../src/db';
import { HEAVY_TASK_QUEUE } from '../../src/shared/constants';
import { orderWorkflowId, type OrderWorkflowResult } from '../../src/shared/order';
import { testActivityDeps } from '../../harness/activity-deps';
import type { TestDatabase } from '../../harness/databases';
import { createTimeSkippingEnv } from '../../harness/temporal/test-env';
import { startAlertSink, type AlertSink } from '../operations/helpers';
import { bundledWorker, workflowBundle } from './bundles';
import { startOrderIdsAt } from './orders';
import { startPartners, type Partners } from './stack';

// The set-up of the workflow tests that run the real workflows and activities on the
// time-skipping server: one server per test file (with the warehouse and SMTP partners, an
// alert sink, as the file needs), and per database a worker on a task queue of its own.

/** What a file's `beforeAll` started; read it inside tests and hooks. */
export interface TimeSkippingStack {
  readonly env: TestWorkflowEnvironment;
  readonly partners: Partners;
  readonly sink: AlertSink;
}

/** Starts the file's time-skipping server, and what it asks for, before its tests; stops after. */
export function useTimeSkippingStack(
  parts: { partners?: boolean; sink?: boolean } = {},
): TimeSkippingStack {
  let env: TestWorkflowEnvironment | undefined;
  let partners: Partners | undefined;
  let sink: AlertSink | undefined;
  let invoices: InvoiceWorker | undefined;
  beforeAll(async () => {
    env = await createTimeSkippingEnv();
    invoices = await startInvoiceWorker(env);
    if (parts.partners) partners = await startPartners();
    if (parts.sink) sink = await startAlertSink();
  });
  afterAll(async () => {
    await sink?.close();
    await partners?.close();
    await invoices?.stop();
    await env?.teardown();
  });
  return {
    get env() {
      return started('the time-skipping server', env);
    },
    get partners() {
      return started('the partners (useTimeSkippingStack({ partners: true }))', partners);
    },
    get sink() {
      return started('the alert sink (useTimeSkippingStack({ sink: true }))', sink);
    },
  };
}

export interface InvoiceWorker {
  stop(): Promise<void>;
}

/**
 * A worker on `heavy` that takes the invoice every fulfilled order starts there and finishes it
 * at once. Without one, the invoice's first workflow task waits for ever, and the time-skipping
 * server skips no time while any workflow task waits: every retry backoff and timer after a
 * fulfilment ran in real time (issue 37: 30 s of a refund test were a cancel's backoff, waited
 * out). The invoice itself is proven on a real heavy worker by test/heavy.
 */
export async function startInvoiceWorker(env: TestWorkflowEnvironment): Promise<InvoiceWorker> {
  const worker = await bundledWorker(env, await workflowBundle(), HEAVY_TASK_QUEUE, {
    generateInvoicePdf: async ({ orderId }: { orderId: number }) => ({
      orderId,
      file: `invoice-${orderId}.pdf`,
      bytes: 0,
      sha256: '',
    }),
  });
  const running = worker.run();
  return {
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await running;
    },
  };
}

/** A database of one `describe.each(testDatabases)` block and the worker over it. */
export interface OrderWorker {
  readonly db: DatabaseHandle;
  readonly taskQueue: string;
  /** Runs the payment workflow of one event for the order, as the webhook's starter would. */
  pay: (input: { orderId: number; eventId: string; paymentRef?: string }) => Promise<unknown>;
  /** The result of the order's latest workflow run. */
  orderResult: (orderId: number) => Promise<OrderWorkflowResult>;
}

/**
 * Opens the block's database and runs a worker of the real workflows and activities over it,
 * calling the stack's partners (and its alert sink with `alerts`). The databases of a file share
 * one server and one warehouse, so each gets order IDs of its own (`order-<id>` workflow IDs,
 * alert IDs and the warehouse's idempotency keys of one never meet the other's).
 */
export function useOrderWorker(
  stack: TimeSkippingStack,
  database: Pick<TestDatabase, 'name' | 'create'>,
  { queue, alerts = false }: { queue: string; alerts?: boolean },
): OrderWorker {
  const taskQueue = `${queue}-${randomUUID()}`;
  let db: DatabaseHandle | undefined;
  let worker: Worker | undefined;
  let running: Promise<void> | undefined;
  beforeAll(async () => {
    db = await database.create();
    await startOrderIdsAt(db, database.name === 'sqlite' ? 1 : 100_000);
    const activities = createActivities({
      ...testActivityDeps(db, stack.partners),
      ...(alerts && { alerts: { alertWebhookUrl: stack.sink.url, temporalUiUrl: undefined } }),
      client: stack.env.client,
    });
    worker = await bundledWorker(stack.env, await workflowBundle(), taskQueue, activities);
    running = worker.run();
  });
  afterAll(async () => {
    worker?.shutdown();
    await running;
    await db?.close();
  });
  return {
    get db() {
      return started('the test database', db);
    },
    taskQueue,
    pay: ({ orderId, eventId, paymentRef }) =>
      stack.env.client.workflow.execute('paymentWorkflow', {
        taskQueue,
        workflowId: `payment-${eventId}`,
        args: [{ eventId, orderId, amount: 5400, paymentRef }],
        workflowExecutionTimeout: '1 hour',
      }),
    orderResult: (orderId) =>
      stack.env.client.workflow.getHandle(orderWorkflowId(orderId)).result(),
  };
}

/** The input an alert workflow was started with, once it completed, as JSON text. */
export async function alertInput(env: TestWorkflowEnvironment, workflowId: string) {
  const alert = env.client.workflow.getHandle(workflowId);
  await alert.result();
  const [started] = await alert.fetchHistory().then((h) => h.events ?? []);
  const input = started?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
  return Buffer.from(input ?? []).toString();
}

function started<T>(what: string, value: T | undefined): T {
  if (value === undefined) throw new Error(`${what} is not started: use it in a test or hook`);
  return value;
}
