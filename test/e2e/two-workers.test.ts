import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createLoyaltyRepository } from '../../src/db';
import { PAYMENTS_TASK_QUEUE, paymentWorkflowId } from '../../src/shared/constants';
import { orderWorkflowId } from '../../src/shared/order';
import { spawnWorker, stopWorker, type WorkerProcess } from '../operations/helpers';
import { testDatabases } from '../../harness/databases';
import { eventually } from '../support/eventually';
import { startPaymentStack, type PaymentStack } from '../support/stack';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { deliverWebhook, uniqueEventId } from '../support/webhook';

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

describe.each(testDatabases)('two worker processes racing ($name)', ({ name }) => {
  let stack: PaymentStack;
  let workers: WorkerProcess[] = [];

  beforeAll(async () => {
    stack = await startPaymentStack(env, { database: name, worker: false, startTimeoutMs: 10_000 });
    const workerEnv = {
      ...process.env,
      NODE_ENV: 'development',
      LOG_LEVEL: 'warn',
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_NAMESPACE: env.namespace ?? 'default',
      DATABASE_URL: stack.db.url,
      WAREHOUSE_API_URL: stack.warehouseUrl,
      SMTP_URL: stack.smtp.url,
    };
    workers = [spawnWorker(workerEnv), spawnWorker(workerEnv)];
    await eventually(
      async () => {
        const queue = await env.client.workflowService.describeTaskQueue({
          namespace: env.namespace ?? 'default',
          taskQueue: { name: PAYMENTS_TASK_QUEUE },
        });
        // Each of these two by its pid: the server also lists the pollers of the workers an
        // earlier test stopped, for a while.
        for (const worker of workers) {
          expect(queue.pollers?.map((p) => p.identity)).toContainEqual(
            expect.stringMatching(new RegExp(`^${worker.child.pid}@`)),
          );
        }
      },
      { timeoutMs: 60_000 },
    );
  }, 120_000);

  afterAll(async () => {
    // SIGTERM: each worker finishes its in-flight work and exits 0 by itself.
    for (const code of await Promise.all(workers.map((w) => stopWorker(w)))) {
      expect(code).toBe(0);
    }
    await stack?.close();
  });

  it('records, ships, mails and awards each order once while both workers race over its event', async () => {
    const orders = stack.orders;
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
        ...Array.from({ length: 20 }, () => deliverWebhook(stack.app, e)),
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

    const payments = stack.payments;
    const ledger = await createLoyaltyRepository(stack.db.db).ledgerFor(1);
    for (const orderId of orderIds) {
      expect(await payments.listByOrder(orderId)).toHaveLength(1);
      expect(stack.warehouse.requests.filter((r) => r.orderId === orderId)).toHaveLength(1);
      expect(
        stack.smtp.messages.filter(
          (m) => m.messageId === `<order-${orderId}-confirmation@order-payments.local>`,
        ),
      ).toHaveLength(1);
      expect(ledger.filter((entry) => entry.orderId === orderId)).toHaveLength(1);
      expect((await orders.findById(orderId))?.refundReviewRequestedAt).toBeNull();
    }
    // Both processes did some of the work, counted over every task of the fifteen runs: an order
    // run's activities follow its workflow tasks to one worker (sticky queue, eager dispatch), so
    // the five order runs alone are only five draws.
    const identities = new Set<string>();
    const workflowIds = events.flatMap((e) => [
      paymentWorkflowId(e.id),
      `racing-${e.id}`,
      orderWorkflowId(e.order_id),
    ]);
    for (const workflowId of workflowIds) {
      const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
      for (const ev of history.events ?? []) {
        const identity =
          ev.workflowTaskStartedEventAttributes?.identity ??
          ev.activityTaskStartedEventAttributes?.identity;
        if (identity) identities.add(identity);
      }
    }
    expect(identities.size).toBe(2);
  });
});
