import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { type ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createOrdersRepository } from '../../src/db';
import { createHeavyWorker } from '../../src/workers/heavy';
import {
  HEAVY_TASK_QUEUE,
  PAYMENTS_TASK_QUEUE,
  paymentWorkflowId,
} from '../../src/shared/constants';
import { FailureType } from '../../src/shared/errors';
import { orderWorkflowId } from '../../src/shared/order';
import { createPaymentWorker } from '../../src/workers/payments';
import { invoiceWorkflowId } from '../../src/shared/invoice';
import type { invoiceWorkflow } from '../../src/workflows/invoice';
import type { aggregateStockWorkflow } from '../../src/workflows/stock';
import { testActivityDeps } from '../../harness/activity-deps';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { uniqueEventId } from '../support/webhook';
import { prebuilt, workflowBundle } from '../support/bundles';
import { createTestOrder } from '../support/orders';
import { heavyTestActivityDeps, runUntilStopped, type RunningWorker } from '../support/workers';
import { startPartners, type Partners } from '../support/stack';

// User-facing work and heavy work on separate task queues and worker pools: a heavy queue
// saturated with slow invoices does not delay an order's confirmation mail on `payments`.
// A real dev server, the real payment worker and the real heavy worker.
const BACKLOG = 20;
const INVOICE_MS = 1_000;
/** "Within a couple of seconds" of the payment, with room for a slow CI machine. */
const MAIL_DEADLINE_MS = 3_000;

const sqlite = testDatabases.find((d) => d.name === 'sqlite')!;

let env: TestWorkflowEnvironment;
let db: TestDatabaseHandle;
let partners: Partners;
let invoiceDir: string;
let bundle: WorkflowBundleWithSourceMap;
const workers: RunningWorker[] = [];

beforeAll(async () => {
  [env, db, bundle] = await Promise.all([
    createDevServerEnv(),
    sqlite.create(),
    // One bundle for both workers, as in production (they load the same workflow code).
    workflowBundle(),
  ]);
  partners = await startPartners();
  invoiceDir = mkdtempSync(path.join(tmpdir(), 'invoices-'));
  const paymentWorker = await createPaymentWorker({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    activities: testActivityDeps(db, partners),
    overrides: prebuilt(bundle),
  });
  const heavyWorker = await createHeavyWorker({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    maxConcurrentActivities: 1,
    activities: heavyTestActivityDeps(db, {
      invoiceDir,
      exportDir: path.join(invoiceDir, 'exports'),
      invoiceDelayMs: INVOICE_MS,
    }),
    overrides: prebuilt(bundle),
  });
  workers.push(...[paymentWorker, heavyWorker].map(runUntilStopped));
}, 120_000);

afterAll(async () => {
  for (const worker of workers) await worker.stop();
  await partners?.close();
  await db?.close();
  await env?.teardown();
  if (invoiceDir) rmSync(invoiceDir, { recursive: true, force: true });
});

async function newOrder(): Promise<number> {
  const order = await createTestOrder(createOrdersRepository(db.db));
  return order.id;
}

const invoicesWritten = () => readdirSync(invoiceDir).filter((f) => f.endsWith('.pdf')).length;

it('writes an invoice on the heavy queue, and fails an unknown order at once with the cause kept', async () => {
  const orderId = await newOrder();
  const result = await env.client.workflow.execute<typeof invoiceWorkflow>('invoiceWorkflow', {
    workflowId: invoiceWorkflowId(orderId),
    taskQueue: HEAVY_TASK_QUEUE,
    args: [{ orderId }],
    workflowExecutionTimeout: '1 minute',
  });
  expect(result).toMatchObject({ orderId, file: path.join(invoiceDir, `order-${orderId}.pdf`) });

  const failure = await env.client.workflow
    .execute('invoiceWorkflow', {
      workflowId: invoiceWorkflowId(999_999),
      taskQueue: HEAVY_TASK_QUEUE,
      args: [{ orderId: 999_999 }],
      workflowExecutionTimeout: '1 minute',
    })
    .catch((err: unknown) => err);
  expect(failure).toBeInstanceOf(WorkflowFailedError);
  const cause = (failure as WorkflowFailedError).cause as ApplicationFailure;
  expect(cause.type).toBe(FailureType.InvoiceFailed);
  expect((cause.cause?.cause as ApplicationFailure).type).toBe(FailureType.OrderNotFound);
  rmSync(result.file);
});

it('sends a confirmation mail within seconds while 20 slow invoices queue on the heavy worker', async () => {
  // The backlog: 20 invoices of 1 s each for a heavy worker that runs one at a time.
  const backlog: number[] = [];
  for (let i = 0; i < BACKLOG; i++) backlog.push(await newOrder());
  await Promise.all(
    backlog.map((orderId) =>
      env.client.workflow.start('invoiceWorkflow', {
        workflowId: invoiceWorkflowId(orderId),
        taskQueue: HEAVY_TASK_QUEUE,
        args: [{ orderId }],
        workflowExecutionTimeout: '5 minutes',
      }),
    ),
  );

  // Let the heavy worker get going: it works the backlog off one invoice a second.
  const waitStarted = Date.now();
  while (invoicesWritten() < 2) {
    if (Date.now() - waitStarted > 30_000) throw new Error('the heavy worker never got going');
    await new Promise((r) => setTimeout(r, 50));
  }

  // A customer pays for a new order.
  const orderId = await newOrder();
  const eventId = uniqueEventId();
  const paidAt = Date.now();
  await env.client.workflow.start('paymentWorkflow', {
    workflowId: paymentWorkflowId(eventId),
    taskQueue: PAYMENTS_TASK_QUEUE,
    args: [{ eventId, orderId, amount: 5_400 }],
    workflowExecutionTimeout: '5 minutes',
  });

  const messageId = `<order-${orderId}-confirmation@test.local>`;
  while (!partners.smtp.messages.some((m) => m.messageId === messageId)) {
    if (Date.now() - paidAt > 30_000) throw new Error('the confirmation mail never arrived');
    await new Promise((r) => setTimeout(r, 20));
  }
  const mailAfterMs = Date.now() - paidAt;
  const invoicesDoneByThen = invoicesWritten();

  expect(mailAfterMs).toBeLessThan(MAIL_DEADLINE_MS);
  // The heavy backlog was still being worked off when the mail arrived.
  expect(invoicesDoneByThen).toBeLessThan(BACKLOG);
  const stillRunning = await Promise.all(
    backlog.map(async (id) => {
      const d = await env.client.workflow.getHandle(invoiceWorkflowId(id)).describe();
      return d.status.name === 'RUNNING';
    }),
  );
  expect(stillRunning.filter(Boolean).length).toBeGreaterThanOrEqual(BACKLOG - 5);

  // The order workflow completed without waiting for its own invoice, which queues behind the
  // backlog on `heavy`, started by the order workflow and abandoned to live on by itself.
  await env.client.workflow.getHandle(orderWorkflowId(orderId)).result();
  const invoice = await env.client.workflow.getHandle(invoiceWorkflowId(orderId)).describe();
  expect(invoice.taskQueue).toBe(HEAVY_TASK_QUEUE);
  expect(invoice.status.name).toBe('RUNNING');
  expect(invoice.parentExecution?.workflowId).toBe(orderWorkflowId(orderId));
  process.stderr.write(
    `confirmation mail after ${mailAfterMs} ms; invoices written by then: ${invoicesDoneByThen}/${BACKLOG}\n`,
  );
});

it('runs the scheduled stock aggregation on the heavy worker, its workflow staying on payments', async () => {
  const workflowId = `aggregate-stock-test-${Date.now()}`;
  const scheduledAt = '2025-01-31T09:05:00.000Z';
  // As the Schedule starts it: on `payments`, whose worker no longer registers aggregateStock.
  const result = await env.client.workflow.execute<typeof aggregateStockWorkflow>(
    'aggregateStockWorkflow',
    {
      workflowId,
      taskQueue: PAYMENTS_TASK_QUEUE,
      args: [{ scheduledAt }],
      // The heavy worker works off its invoice backlog first (one slot, 1 s each).
      workflowExecutionTimeout: '2 minutes',
    },
  );

  expect(result).toMatchObject({ takenAt: scheduledAt, created: true });
  const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
  const scheduled = history.events!.flatMap((e) =>
    e.activityTaskScheduledEventAttributes ? [e.activityTaskScheduledEventAttributes] : [],
  );
  expect(scheduled.map((a) => [a.activityType?.name, a.taskQueue?.name])).toEqual([
    ['aggregateStock', HEAVY_TASK_QUEUE],
  ]);
  const started = history.events!.find((e) => e.workflowExecutionStartedEventAttributes);
  expect(started?.workflowExecutionStartedEventAttributes?.taskQueue?.name).toBe(
    PAYMENTS_TASK_QUEUE,
  );
}, 150_000);
