import { EXIT_OK, EXIT_PROBLEM, main } from '../../src/cli/ops';
import { createOrdersRepository, createSettlementsRepository } from '../../src/db';
import { PAYMENTS_TASK_QUEUE, paymentWorkflowId } from '../../src/shared/constants';
import {
  orderWorkflowId,
  settlementEventId,
  type OrderWorkflowResult,
} from '../../src/shared/order';
import { testDatabases } from '../../harness/databases';
import { createTestOrder } from '../support/orders';
import { paymentStackForTests } from '../support/dev-server-for-tests';
import { uniqueEventId } from '../support/webhook';
import { captureIo, cliEnv } from './helpers';

// Issue 25, point 3: `npm run ops -- settle` through the real CLI, against the payment worker
// on a dev server: a pending order paid short or split is settled once, fulfilled once, and
// who, when and why are in the database and on the order's workflow.
describe.each(testDatabases)('ops settle ($name)', ({ name }) => {
  const live = paymentStackForTests({ database: name });

  async function ops(...argv: string[]) {
    const io = captureIo({ env: { ...cliEnv(live.env), DATABASE_URL: live.stack.db.url } });
    const code = await main(argv, io);
    return { code, stdout: io.stdout(), stderr: io.stderr() };
  }

  /** Pays the order `amount` through the payment workflow and waits for its order run. */
  async function pay(orderId: number, amount: number) {
    const eventId = uniqueEventId();
    await live.env.client.workflow.execute('paymentWorkflow', {
      taskQueue: PAYMENTS_TASK_QUEUE,
      workflowId: paymentWorkflowId(eventId),
      args: [{ eventId, orderId, amount }],
      workflowExecutionTimeout: '1 minute',
    });
    return orderRun(orderId);
  }
  const orderRun = (orderId: number): Promise<OrderWorkflowResult> =>
    live.env.client.workflow.getHandle(orderWorkflowId(orderId)).result();
  const shipments = (orderId: number) =>
    live.stack.warehouse.requests.filter((r) => r.orderId === orderId);

  it('settles a split payment once, fulfils it once, and says so when run again', async () => {
    const order = await createTestOrder(live.stack.orders, { totalAmount: 5400 });
    for (const amount of [3000, 2000]) {
      expect((await pay(order.id, amount)).processed.map((p) => p.outcome)).toEqual([
        'refund_review',
      ]);
    }
    expect(await live.stack.orders.findById(order.id)).toMatchObject({ status: 'pending' });

    const first = await ops(
      'settle',
      String(order.id),
      '--reason',
      'rest paid by bank transfer',
      '--by',
      'alice',
    );
    expect(first).toMatchObject({ code: EXIT_OK, stderr: '' });
    expect(first.stdout).toMatch(
      /Settled order \d+ with payments \d+, \d+ \(5000 paid\), by alice/,
    );
    expect(first.stdout).toContain(`Handed to the order's workflow order-${order.id}`);

    const run = await orderRun(order.id);
    expect(run.processed).toEqual([
      {
        eventId: settlementEventId(order.id),
        outcome: 'fulfilled',
        settlement: {
          settledBy: 'alice',
          reason: 'rest paid by bank transfer',
          settledAt: expect.any(String),
        },
      },
    ]);
    expect(shipments(order.id)).toHaveLength(1);
    const settlement = await createSettlementsRepository(live.stack.db.db).find(order.id);
    expect(settlement).toMatchObject({ settledBy: 'alice', reason: 'rest paid by bank transfer' });
    expect(settlement!.paymentIds).toHaveLength(2);
    expect(await createOrdersRepository(live.stack.db.db).findById(order.id)).toMatchObject({
      status: 'paid',
      shipmentStatus: 'requested',
      confirmationSentAt: expect.any(String),
    });

    const again = await ops('settle', String(order.id), '--reason', 'again');
    expect(again.code).toBe(EXIT_OK);
    expect(again.stdout).toContain('was already settled, by alice');
    expect(again.stdout).toContain('nothing to hand over');
    // The customer pays the full total after all: a double charge to review, no second shipment.
    expect((await pay(order.id, 5400)).processed.map((p) => p.outcome)).toEqual(['refund_review']);
    expect(shipments(order.id)).toHaveLength(1);
  });

  it('lets a settlement and a payment of the total committing together pay the order once', async () => {
    const settlements = createSettlementsRepository(live.stack.db.db);
    for (let i = 0; i < 5; i++) {
      const order = await createTestOrder(live.stack.orders);
      await live.stack.payments.recordPayment({
        providerEventId: uniqueEventId(),
        orderId: order.id,
        amount: 2700,
      });
      const [settled, paid] = await Promise.all([
        settlements.settle({ orderId: order.id, settledBy: 'race', reason: 'race' }),
        live.stack.payments.recordPayment({
          providerEventId: uniqueEventId(),
          orderId: order.id,
          amount: 5400,
        }),
      ]);
      const payingFirst = paid.kind === 'created' && paid.firstForOrder;
      expect([settled.kind === 'settled', payingFirst].filter(Boolean)).toHaveLength(1);
      if (!payingFirst) continue;
      expect(settled).toEqual({ kind: 'refused', why: 'already_paid' });
      expect(await settlements.find(order.id)).toBeUndefined();
    }
  });

  it('hands the same settlement over again when the first run stopped before the hand-over', async () => {
    const order = await createTestOrder(live.stack.orders);
    await pay(order.id, 5000);
    // What a run killed between its commit and its signal leaves behind.
    await createSettlementsRepository(live.stack.db.db).settle({
      orderId: order.id,
      settledBy: 'bob',
      reason: 'short by 400, written off',
    });
    const rerun = await ops('settle', String(order.id), '--reason', 'retry after a crash');
    expect(rerun.code).toBe(EXIT_OK);
    expect(rerun.stdout).toContain('was already settled, by bob');
    expect(rerun.stdout).toContain(`Handed to the order's workflow order-${order.id}`);
    const run = await orderRun(order.id);
    expect(run.processed).toMatchObject([
      {
        eventId: settlementEventId(order.id),
        outcome: 'fulfilled',
        settlement: { settledBy: 'bob' },
      },
    ]);
    expect(shipments(order.id)).toHaveLength(1);
  });

  it('refuses, changing nothing, an order that is paid, has no payment, has refunds or does not exist', async () => {
    const paid = await createTestOrder(live.stack.orders);
    await pay(paid.id, 5400);
    const unpaid = await createTestOrder(live.stack.orders);
    const refunded = await createTestOrder(live.stack.orders);
    await pay(refunded.id, 5000);
    await createOrdersRepository(live.stack.db.db).setRefundedAmount(refunded.id, 5000);

    for (const [orderId, message] of [
      [paid.id, `order ${paid.id} is already paid`],
      [unpaid.id, `order ${unpaid.id} has no payment`],
      [refunded.id, `order ${refunded.id} has refunds recorded`],
      [2_000_000, 'order 2000000 does not exist'],
    ] as const) {
      const result = await ops('settle', String(orderId), '--reason', 'try');
      expect(result).toMatchObject({ code: EXIT_PROBLEM, stdout: '' });
      expect(result.stderr).toContain(message);
      expect(result.stderr).toContain('Nothing was changed.');
    }
    expect(await createSettlementsRepository(live.stack.db.db).find(unpaid.id)).toBeUndefined();
    expect(await live.stack.orders.findById(refunded.id)).toMatchObject({ status: 'pending' });
  });
});
