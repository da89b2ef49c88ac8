import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/http/app';
import { createLogger } from '../../src/logger';
import { startSmtpSink, type SmtpSink } from '../../dev/partners/smtp-sink';
import {
  createLoyaltyRepository,
  createOrdersRepository,
  createPaymentsRepository,
} from '../../src/db';
import { PAYMENTS_TASK_QUEUE, paymentWorkflowId } from '../../src/shared/constants';
import { orderWorkflowId } from '../../src/shared/order';
import { createPaymentStarter } from '../../src/temporal/payment-starter';
import {
  createWarehouseSimulator,
  type WarehouseSimulator,
} from '../../dev/partners/warehouse-simulator';
import { testDatabases, type TestDatabaseHandle } from '../support/databases';
import { createDevServerEnv } from '../support/temporal';
import { deliverWebhook, TEST_WEBHOOK_SECRET, uniqueEventId } from '../support/webhook';

// Two worker processes (the production entry, src/worker.ts) on the same task queue, racing
// over the same events: every effect still happens once. Also shows that SIGTERM stops a
// worker cleanly (exit code 0).
let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await createDevServerEnv();
});
afterAll(async () => {
  await env?.teardown();
});

describe.each(testDatabases)('two worker processes racing ($name)', ({ create }) => {
  let db: TestDatabaseHandle;
  let warehouse: WarehouseSimulator;
  let smtp: SmtpSink;
  let app: FastifyInstance;
  let workers: ChildProcess[] = [];

  beforeAll(async () => {
    db = await create();
    warehouse = createWarehouseSimulator();
    const warehouseUrl = await warehouse.listen(0);
    smtp = await startSmtpSink();
    const workerEnv = {
      ...process.env,
      NODE_ENV: 'development',
      LOG_LEVEL: 'warn',
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_NAMESPACE: env.namespace ?? 'default',
      DATABASE_URL: db.url,
      WAREHOUSE_API_URL: warehouseUrl,
      SMTP_URL: smtp.url,
    };
    workers = [startWorker(workerEnv), startWorker(workerEnv)];
    await eventually(async () => {
      const queue = await env.client.workflowService.describeTaskQueue({
        namespace: env.namespace ?? 'default',
        taskQueue: { name: PAYMENTS_TASK_QUEUE },
      });
      expect(new Set(queue.pollers?.map((p) => p.identity)).size).toBeGreaterThanOrEqual(2);
    });
    app = await buildApp({
      config: { PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET, WEBHOOK_BODY_LIMIT_BYTES: 65536 },
      logger: createLogger({ LOG_LEVEL: 'silent' }),
      payments: createPaymentStarter(env.client, { startTimeoutMs: 10_000 }),
      ordersRepository: createOrdersRepository(db.db),
      paymentsRepository: createPaymentsRepository(db.db),
    });
  }, 120_000);

  afterAll(async () => {
    await app?.close();
    await Promise.all(workers.map((w) => stopWorker(w)));
    await smtp?.close();
    await warehouse?.close();
    await db?.close();
  });

  it('records, ships, mails and awards each order once while both workers race over its event', async () => {
    const orders = createOrdersRepository(db.db);
    const orderIds: number[] = [];
    for (let i = 0; i < 5; i++) {
      const { order } = await orders.createWithIdempotencyKey({
        userId: 1,
        customerEmail: 'a@example.com',
        totalAmount: 100,
      });
      orderIds.push(order.id);
    }
    const events = orderIds.map((orderId) => ({
      id: uniqueEventId(),
      event: 'payment.succeeded',
      order_id: orderId,
      amount: 100,
    }));

    // Each event: 20 concurrent webhook deliveries, plus a second execution under another
    // workflow ID (what a redelivery after retention looks like), so that the two workers run
    // recordPayment for the same event at the same time.
    await Promise.all(
      events.flatMap((e) => [
        ...Array.from({ length: 20 }, () => deliverWebhook(app, e)),
        env.client.workflow.start('paymentWorkflow', {
          workflowId: `racing-${e.id}`,
          taskQueue: PAYMENTS_TASK_QUEUE,
          args: [{ eventId: e.id, orderId: e.order_id, amount: e.amount }],
        }),
      ]),
    );
    for (const e of events) {
      await env.client.workflow.getHandle(paymentWorkflowId(e.id)).result();
      await env.client.workflow.getHandle(`racing-${e.id}`).result();
      await env.client.workflow.getHandle(orderWorkflowId(e.order_id)).result();
    }

    const payments = createPaymentsRepository(db.db);
    const ledger = await createLoyaltyRepository(db.db).ledgerFor(1);
    for (const orderId of orderIds) {
      expect(await payments.listByOrder(orderId)).toHaveLength(1);
      expect(warehouse.requests.filter((r) => r.orderId === orderId)).toHaveLength(1);
      expect(
        smtp.messages.filter(
          (m) => m.messageId === `<order-${orderId}-confirmation@order-payments.local>`,
        ),
      ).toHaveLength(1);
      expect(ledger.filter((entry) => entry.orderId === orderId)).toHaveLength(1);
      expect((await orders.findById(orderId))?.refundReviewRequestedAt).toBeNull();
    }
    // Both processes did some of the work.
    const identities = new Set<string>();
    for (const e of events) {
      const history = await env.client.workflow
        .getHandle(orderWorkflowId(e.order_id))
        .fetchHistory();
      for (const ev of history.events ?? []) {
        const identity = ev.activityTaskStartedEventAttributes?.identity;
        if (identity) identities.add(identity);
      }
    }
    expect(identities.size).toBe(2);
  });
});

function startWorker(env: NodeJS.ProcessEnv): ChildProcess {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', resolve(__dirname, '../../src/worker.ts')],
    {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    },
  );
  child.stderr?.on('data', (chunk: Buffer) =>
    process.stderr.write(`[worker ${child.pid}] ${chunk.toString()}`),
  );
  return child;
}

/** SIGTERM, then the worker must finish its in-flight work and exit 0 by itself. */
async function stopWorker(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null)
    throw new Error(`worker ${child.pid} exited early with ${child.exitCode}`);
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  child.kill('SIGTERM');
  const code = await Promise.race([
    exited,
    new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), 30_000)),
  ]);
  if (code === 'timeout') {
    child.kill('SIGKILL');
    throw new Error(`worker ${child.pid} did not stop within 30 s of SIGTERM`);
  }
  expect(code).toBe(0);
}

async function eventually(check: () => Promise<void>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}
