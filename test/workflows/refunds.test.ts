import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { createLoyaltyRepository, createOrdersRepository } from '../../src/db';
import { returnReviewAlertWorkflowId } from '../../src/shared/alert';
import { invoiceWorkflowId } from '../../src/shared/invoice';
import { orderStateQuery, orderWorkflowId } from '../../src/shared/order';
import {
  refundedTotal,
  refundWorkflowId,
  type RecordedRefund,
  type RefundEvent,
} from '../../src/shared/payment-events';
import type { RefundWorkflowResult } from '../../src/workflows/refund';
import { testDatabases } from '../../harness/databases';
import { eventually } from '../support/eventually';
import { createTestOrder } from '../support/orders';
import { alertInput, useOrderWorker, useTimeSkippingStack } from '../support/time-skipping-stack';

// Issue 25, point 1, inward of HTTP: refunds recorded once by event ID, matched to their payment
// by its reference, and applied in the order's workflow; the real workflows and activities on
// the time-skipping server, on SQLite and PostgreSQL.
const stack = useTimeSkippingStack({ partners: true });

describe('refundedTotal', () => {
  it('gives the same total for any order and duplication of the same refund events', () => {
    const refund = fc.record({
      kind: fc.constantFrom<RecordedRefund['kind']>('refund', 'cumulative'),
      refundId: fc.constantFrom('re_1', 're_2', 're_3'),
      amount: fc.integer({ min: 1, max: 5_000 }),
      status: fc.constantFrom<RecordedRefund['status']>('pending', 'succeeded', 'failed'),
    });
    fc.assert(
      fc.property(fc.array(refund, { maxLength: 8 }), fc.nat(), (events, seed) => {
        // One amount per refund ID, as a provider reports it.
        const consistent = events.map((e) => ({
          ...e,
          amount: e.kind === 'refund' ? Number(e.refundId.slice(3)) * 1000 : e.amount,
        }));
        const shuffled = [...consistent, ...consistent.slice(0, seed % 3)].sort(
          (a, b) =>
            ((JSON.stringify(a).length * (seed + 1)) % 7) -
            ((JSON.stringify(b).length * (seed + 1)) % 7),
        );
        expect(refundedTotal(shuffled)).toBe(refundedTotal(consistent));
      }),
    );
  });

  it('counts a refund once, at its furthest status, whatever came last', () => {
    expect(
      refundedTotal([
        { kind: 'refund', refundId: 're_1', amount: 2000, status: 'succeeded' },
        { kind: 'refund', refundId: 're_1', amount: 2000, status: 'pending' },
        { kind: 'refund', refundId: 're_2', amount: 1000, status: 'succeeded' },
        { kind: 'refund', refundId: 're_2', amount: 1000, status: 'failed' },
      ]),
    ).toBe(2000);
    expect(
      refundedTotal([{ kind: 'cumulative', refundId: null, amount: 5400, status: 'succeeded' }]),
    ).toBe(5400);
  });
});

describe.each(testDatabases)('refunds through the order workflow ($name)', ({ name, create }) => {
  const worker = useOrderWorker(stack, { name, create }, { queue: 'refunds' });
  const { taskQueue, orderResult } = worker;
  const pay = (orderId: number, eventId: string, paymentRef: string) =>
    worker.pay({ orderId, eventId, paymentRef });
  const refund = (event: RefundEvent): Promise<RefundWorkflowResult> =>
    stack.env.client.workflow.execute('refundWorkflow', {
      taskQueue,
      workflowId: refundWorkflowId(event.eventId),
      args: [event],
      workflowExecutionTimeout: '1 hour',
    });
  const fullRefund = (paymentRef: string): RefundEvent => ({
    eventId: `evt_re_${randomUUID()}`,
    paymentRef,
    kind: 'refund',
    refundId: `re_${randomUUID()}`,
    amount: 5400,
    status: 'succeeded',
  });

  it('keeps a refund that comes before its payment, and then ships nothing', async () => {
    const order = await createTestOrder(createOrdersRepository(worker.db.db));
    const paymentRef = `stripe~pi_${randomUUID()}`;
    expect(await refund(fullRefund(paymentRef))).toEqual({ orderId: null, orderWorkflowId: null });

    await pay(order.id, `evt_${randomUUID()}`, paymentRef);
    const result = await orderResult(order.id);
    expect(result.processed.map((p) => p.outcome)).toEqual(['refunded_before_shipment']);
    expect(stack.partners.warehouse.requests.filter((r) => r.orderId === order.id)).toHaveLength(0);
    expect(await createOrdersRepository(worker.db.db).findById(order.id)).toMatchObject({
      refundedAmount: 5400,
      shipmentStatus: null,
    });
    expect(await createLoyaltyRepository(worker.db.db).ledgerFor(order.userId)).not.toContainEqual(
      expect.objectContaining({ orderId: order.id }),
    );
  });

  const ordersOf = () => createOrdersRepository(worker.db.db);
  const cancelsOf = (orderId: number) =>
    stack.partners.warehouse.cancels.filter((c) => c.orderId === orderId);

  it('cancels the shipment of an order refunded in full before it shipped, and takes the points back once', async () => {
    const orders = ordersOf();
    const order = await createTestOrder(orders, { userId: 900 + Math.floor(Math.random() * 1000) });
    const paymentRef = `stripe~pi_${randomUUID()}`;
    await pay(order.id, `evt_${randomUUID()}`, paymentRef);
    expect((await orderResult(order.id)).processed.map((p) => p.outcome)).toEqual(['fulfilled']);

    const event = fullRefund(paymentRef);
    expect(await refund(event)).toEqual({
      orderId: order.id,
      orderWorkflowId: orderWorkflowId(order.id),
    });
    expect((await orderResult(order.id)).processed.map((p) => p.outcome)).toEqual(['refund']);
    // The same refund delivered again (another event reporting the same refund).
    await refund({ ...event, eventId: `evt_re_${randomUUID()}` });
    await orderResult(order.id);

    expect(await orders.findById(order.id)).toMatchObject({
      refundedAmount: 5400,
      shipmentStatus: 'cancelled',
      returnReviewRequestedAt: null,
    });
    expect(cancelsOf(order.id).map((c) => c.status)).toEqual([200]);
    expect(stack.partners.warehouse.shipments.get(`order-${order.id}-shipment`)?.status).toBe(
      'cancelled',
    );
    const loyalty = createLoyaltyRepository(worker.db.db);
    expect((await loyalty.ledgerFor(order.userId)).map((e) => [e.reason, e.points])).toEqual([
      ['order_confirmed', 100],
      ['order_refunded', -100],
    ]);
    expect(await loyalty.balanceOf(order.userId)).toBe(0);
    await expect(
      stack.env.client.workflow.getHandle(returnReviewAlertWorkflowId(order.id)).describe(),
    ).rejects.toThrow();

    // A later payment of the cancelled order is a double charge: nothing goes to the warehouse.
    await pay(order.id, `evt_${randomUUID()}`, `stripe~pi_${randomUUID()}`);
    await orderResult(order.id);
    expect(stack.partners.warehouse.requests.filter((r) => r.orderId === order.id)).toHaveLength(1);
  });

  it('confirms nothing of an order refunded in full during its warehouse retries, and cancels the shipment', async () => {
    const orders = ordersOf();
    const customerEmail = `retried-${randomUUID()}@x.test`;
    const order = await createTestOrder(orders, { customerEmail });
    const paymentRef = `stripe~pi_${randomUUID()}`;
    const event = fullRefund(paymentRef);
    const { warehouse } = stack.partners;
    warehouse.setMode({ kind: 'unavailable', status: 503 });
    try {
      await pay(order.id, `evt_${randomUUID()}`, paymentRef);
      await eventually(() =>
        expect(warehouse.requests.filter((r) => r.orderId === order.id)).not.toHaveLength(0),
      );
      // Started, not awaited: awaiting would let the server skip to the warehouse's next attempt.
      await stack.env.client.workflow.start('refundWorkflow', {
        taskQueue,
        workflowId: refundWorkflowId(event.eventId),
        args: [event],
      });
      const orderRun = stack.env.client.workflow.getHandle(orderWorkflowId(order.id));
      await eventually(async () =>
        expect((await orderRun.query(orderStateQuery)).pending).toContain(event.eventId),
      );
    } finally {
      warehouse.setMode({ kind: 'ok' });
    }

    const result = await orderResult(order.id);
    expect(result.processed.map((p) => p.outcome)).toEqual(['fulfilled', 'refund']);
    expect(await orders.findById(order.id)).toMatchObject({
      refundedAmount: 5400,
      shipmentStatus: 'cancelled',
      confirmationSentAt: null,
    });
    expect(cancelsOf(order.id).map((c) => c.status)).toEqual([200]);
    expect(
      stack.partners.smtp.messages.filter((m) => m.envelopeTo.includes(customerEmail)),
    ).toEqual([]);
    expect(await createLoyaltyRepository(worker.db.db).ledgerFor(order.userId)).not.toContainEqual(
      expect.objectContaining({ orderId: order.id }),
    );
    await expect(
      stack.env.client.workflow.getHandle(invoiceWorkflowId(order.id)).describe(),
    ).rejects.toThrow();
  });

  /** A new order, paid under a provider reference of its own, and fulfilled. */
  async function fulfilledOrder() {
    const order = await createTestOrder(ordersOf());
    const paymentRef = `stripe~pi_${randomUUID()}`;
    await pay(order.id, `evt_${randomUUID()}`, paymentRef);
    await orderResult(order.id);
    return { order, paymentRef };
  }

  it('flags a full refund of a shipped order for a return review, with one alert', async () => {
    const orders = ordersOf();
    const { order, paymentRef } = await fulfilledOrder();
    expect(await stack.partners.warehouse.ship(`order-${order.id}-shipment`)).toBe(true);

    for (let i = 0; i < 2; i++) {
      await refund(fullRefund(paymentRef));
      await orderResult(order.id);
    }
    expect(await orders.findById(order.id)).toMatchObject({
      shipmentStatus: 'requested',
      returnReviewRequestedAt: expect.any(String),
    });
    // Asked once: the second refund finds the review flagged and leaves it to the person.
    expect(cancelsOf(order.id).map((c) => c.status)).toEqual([409]);
    expect(await alertInput(stack.env, returnReviewAlertWorkflowId(order.id))).toContain(
      'RefundedAfterShipment',
    );
  });

  it('hands a cancel that fails for good to a return review, with one alert', async () => {
    const orders = ordersOf();
    const { order, paymentRef } = await fulfilledOrder();

    // SQLite: down for every attempt of RetryPolicies.warehouseCancellation (its backoff skipped
    // by the server). PostgreSQL: refused at once (non-retryable), the other way to fail.
    const [mode, statuses] =
      name === 'sqlite'
        ? ([{ kind: 'unavailable', status: 503 }, [503, 503, 503, 503, 503]] as const)
        : ([{ kind: 'reject', status: 422 }, [422]] as const);
    stack.partners.warehouse.setMode(mode, statuses.length);
    await refund(fullRefund(paymentRef));
    const result = await orderResult(order.id);
    stack.partners.warehouse.setMode({ kind: 'ok' });
    expect(result.processed.map((p) => p.outcome)).toEqual(['refund']);
    expect(cancelsOf(order.id).map((c) => c.status)).toEqual(statuses);
    expect(await orders.findById(order.id)).toMatchObject({
      shipmentStatus: 'requested',
      returnReviewRequestedAt: expect.any(String),
    });
    expect(await alertInput(stack.env, returnReviewAlertWorkflowId(order.id))).toContain(
      'ShipmentCancelFailed',
    );
  });

  it('records partial refunds as a total, with no review and the points kept', async () => {
    const orders = createOrdersRepository(worker.db.db);
    const order = await createTestOrder(orders, {
      userId: 2000 + Math.floor(Math.random() * 1000),
    });
    const paymentRef = `standard~${randomUUID()}`;
    await pay(order.id, `evt_${randomUUID()}`, paymentRef);
    await orderResult(order.id);
    for (const amount of [2000, 1000]) {
      await refund({ ...fullRefund(paymentRef), amount });
      await orderResult(order.id);
    }
    expect(await orders.findById(order.id)).toMatchObject({
      refundedAmount: 3000,
      returnReviewRequestedAt: null,
    });
    expect(await createLoyaltyRepository(worker.db.db).balanceOf(order.userId)).toBe(100);
  });
});
