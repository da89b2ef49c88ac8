import type { Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { createRefundActivities } from '../../src/activities/refund-activities';
import {
  createLoyaltyRepository,
  createOrdersRepository,
  createPaymentsRepository,
  createRefundsRepository,
  type OrdersRepository,
} from '../../src/db';
import { FailureType } from '../../src/shared/errors';
import { ORDER_CONFIRMED_REASON, ORDER_REFUNDED_REASON } from '../../src/shared/loyalty';
import { refundRecordedSignal } from '../../src/shared/order';
import type { RefundEvent } from '../../src/shared/payment-events';
import { OrderIdSearchAttribute } from '../../src/shared/search-attributes';
import { quietActivityEnvironment } from '../support/activity-environment';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';

// The refund activities, called directly (the workflow tests reach them only through a
// time-skipping server): what each writes, and what a second call after a retry writes.
describe.each(testDatabases)('refund activities ($name)', ({ create }) => {
  let handle: TestDatabaseHandle;
  let orders: OrdersRepository;
  let seq = 0;
  const unique = (prefix: string) => `${prefix}_${++seq}`;
  let userSeq = 3_000;

  beforeAll(async () => {
    handle = await create();
    orders = createOrdersRepository(handle.db);
  });
  afterAll(() => handle?.close());

  /** The activities over the test database, and the signals they sent. */
  function activities() {
    const signalWithStart = jest.fn().mockResolvedValue(undefined);
    const client = { workflow: { signalWithStart } } as unknown as Client;
    const acts = createRefundActivities({
      client,
      orders,
      refunds: createRefundsRepository(handle.db),
      loyalty: createLoyaltyRepository(handle.db),
    });
    return { acts, signalWithStart };
  }

  /** Runs a call of an activity inside an activity context. */
  function run<R>(call: () => Promise<R>): Promise<R> {
    return quietActivityEnvironment().run(call);
  }

  async function paidOrder(totalAmount = 5_000, userId = ++userSeq) {
    const { order } = await orders.createWithIdempotencyKey({
      userId,
      customerEmail: 'buyer@example.com',
      totalAmount,
    });
    const paymentRef = unique('stripe~pi');
    await createPaymentsRepository(handle.db).recordPayment({
      providerEventId: unique('evt_pay'),
      orderId: order.id,
      amount: totalAmount,
      paymentRef,
    });
    return { orderId: order.id, userId, paymentRef };
  }

  function refund(paymentRef: string, amount: number, overrides: Partial<RefundEvent> = {}) {
    const event: RefundEvent = {
      eventId: unique('stripe~evt_re'),
      paymentRef,
      kind: 'refund',
      refundId: unique('re'),
      amount,
      status: 'succeeded',
      ...overrides,
    };
    return run(() => activities().acts.recordRefund(event)).then(() => event);
  }

  async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(ApplicationFailure);
    return error as ApplicationFailure;
  }

  describe('recordRefund', () => {
    it('records the event once and finds its order; a retry learns it was recorded', async () => {
      const { orderId, paymentRef } = await paidOrder();
      const { acts } = activities();
      const event: RefundEvent = {
        eventId: unique('stripe~evt_re'),
        paymentRef,
        kind: 'refund',
        refundId: 're_1',
        amount: 100,
        status: 'succeeded',
      };
      expect(await run(() => acts.recordRefund(event))).toEqual({ created: true, orderId });
      expect(await run(() => acts.recordRefund(event))).toEqual({ created: false, orderId });
      expect(
        await run(() => acts.recordRefund({ ...event, eventId: unique('e'), paymentRef: 'x' })),
      ).toEqual({ created: true, orderId: null });
    });
  });

  describe('handOverRefundToOrder', () => {
    it("signals the order's workflow (starting it if need be) with the refund event", async () => {
      const { acts, signalWithStart } = activities();
      const event = { kind: 'refund' as const, eventId: unique('stripe~evt_re') };

      expect(await run(() => acts.handOverRefundToOrder({ orderId: 42, event }))).toEqual({
        handedOver: true,
      });
      expect(signalWithStart).toHaveBeenCalledTimes(1);
      expect(signalWithStart).toHaveBeenCalledWith('orderWorkflow', {
        workflowId: 'order-42',
        taskQueue: 'test',
        args: [{ orderId: 42 }],
        signal: refundRecordedSignal,
        signalArgs: [event],
        memo: { orderId: 42 },
        typedSearchAttributes: [{ key: OrderIdSearchAttribute, value: 42 }],
      });
    });

    it('signals nothing once an order run finished with the event', async () => {
      const { paymentRef, orderId } = await paidOrder();
      const recorded = await refund(paymentRef, 100);
      await createRefundsRepository(handle.db).markHandled(recorded.eventId, 'chain-1');
      const { acts, signalWithStart } = activities();

      expect(
        await run(() =>
          acts.handOverRefundToOrder({
            orderId,
            event: { kind: 'refund', eventId: recorded.eventId },
          }),
        ),
      ).toEqual({ handedOver: false });
      expect(signalWithStart).not.toHaveBeenCalled();
    });

    it('hands over an event recorded but not yet finished with', async () => {
      const { paymentRef, orderId } = await paidOrder();
      const recorded = await refund(paymentRef, 100);
      const { acts, signalWithStart } = activities();
      await run(() =>
        acts.handOverRefundToOrder({
          orderId,
          event: { kind: 'refund', eventId: recorded.eventId },
        }),
      );
      expect(signalWithStart).toHaveBeenCalledTimes(1);
    });
  });

  describe('applyRefunds', () => {
    it('records a partial refund on the order, not as a full one', async () => {
      const { orderId, paymentRef } = await paidOrder(5_000);
      await refund(paymentRef, 4_999);
      const { acts } = activities();

      expect(await run(() => acts.applyRefunds({ orderId }))).toEqual({
        refundedAmount: 4_999,
        fullyRefunded: false,
        shipmentStatus: null,
        returnReviewRequested: false,
      });
      expect((await orders.findById(orderId))?.refundedAmount).toBe(4_999);
    });

    it('calls a paid order fully refunded when its refunds reach the total, by amounts', async () => {
      const { orderId, paymentRef } = await paidOrder(5_000);
      await refund(paymentRef, 2_000);
      await refund(paymentRef, 3_000);
      // A failed refund counts for nothing.
      await refund(paymentRef, 700, { status: 'failed' });
      await orders.setShipmentStatus(orderId, 'requested');
      const { acts } = activities();

      expect(await run(() => acts.applyRefunds({ orderId }))).toEqual({
        refundedAmount: 5_000,
        fullyRefunded: true,
        shipmentStatus: 'requested',
        returnReviewRequested: false,
      });
      expect((await orders.findById(orderId))?.refundedAmount).toBe(5_000);
      // Applied again (a retry, or the next refund event): the same facts.
      expect(await run(() => acts.applyRefunds({ orderId }))).toMatchObject({
        refundedAmount: 5_000,
        fullyRefunded: true,
      });
    });

    it('calls more than the total fully refunded too, and says when a return review was asked', async () => {
      const { orderId, paymentRef } = await paidOrder(5_000);
      await refund(paymentRef, 6_000, { kind: 'cumulative', refundId: undefined });
      await orders.requestReturnReview(orderId);
      const { acts } = activities();

      expect(await run(() => acts.applyRefunds({ orderId }))).toMatchObject({
        refundedAmount: 6_000,
        fullyRefunded: true,
        returnReviewRequested: true,
      });
    });

    it('never calls a pending order fully refunded: it was not paid by the refunded payment', async () => {
      const { order } = await orders.createWithIdempotencyKey({
        userId: ++userSeq,
        customerEmail: 'buyer@example.com',
        totalAmount: 5_000,
      });
      await refund(unique('stripe~pi'), 5_000, { orderId: order.id });
      const { acts } = activities();

      expect(await run(() => acts.applyRefunds({ orderId: order.id }))).toMatchObject({
        refundedAmount: 5_000,
        fullyRefunded: false,
      });
    });

    it('fails for good with OrderNotFound for an order that does not exist', async () => {
      const { acts } = activities();
      const failure = await failureOf(run(() => acts.applyRefunds({ orderId: 987_654 })));
      expect(failure.type).toBe(FailureType.OrderNotFound);
      expect(failure.nonRetryable).toBe(true);
      expect(failure.message).toBe('order 987654 does not exist');
      expect(failure.details).toEqual([{ orderId: 987_654 }]);
    });
  });

  describe('requestReturnReview', () => {
    it('flags the order once: a retry learns that it was flagged before', async () => {
      const { orderId } = await paidOrder();
      const { acts } = activities();
      expect(await run(() => acts.requestReturnReview({ orderId }))).toEqual({ flagged: true });
      expect(await run(() => acts.requestReturnReview({ orderId }))).toEqual({ flagged: false });
      expect((await orders.findById(orderId))?.returnReviewRequestedAt).not.toBeNull();
    });
  });

  describe('reverseLoyaltyPoints', () => {
    const loyalty = () => createLoyaltyRepository(handle.db);

    it('takes back the points awarded for the order, once, and none of its other points', async () => {
      const { orderId, userId } = await paidOrder();
      // Points of the same order for something else, recorded before the award: not reversed.
      await loyalty().awardForOrder({ userId, orderId, points: 30, reason: 'goodwill' });
      await loyalty().awardForOrder({
        userId,
        orderId,
        points: 100,
        reason: ORDER_CONFIRMED_REASON,
      });
      const { acts } = activities();

      expect(await run(() => acts.reverseLoyaltyPoints({ orderId }))).toEqual({ reversed: true });
      expect(await run(() => acts.reverseLoyaltyPoints({ orderId }))).toEqual({ reversed: false });

      expect(await loyalty().balanceOf(userId)).toBe(30);
      expect((await loyalty().ledgerFor(userId)).map((e) => [e.points, e.reason])).toEqual([
        [30, 'goodwill'],
        [100, ORDER_CONFIRMED_REASON],
        [-100, ORDER_REFUNDED_REASON],
      ]);
    });

    it("takes nothing when the order's points were never awarded, even if another order's were", async () => {
      const userId = ++userSeq;
      const awarded = await paidOrder(5_000, userId);
      const refunded = await paidOrder(5_000, userId);
      await loyalty().awardForOrder({
        userId,
        orderId: awarded.orderId,
        points: 100,
        reason: ORDER_CONFIRMED_REASON,
      });
      const { acts } = activities();

      expect(await run(() => acts.reverseLoyaltyPoints({ orderId: refunded.orderId }))).toEqual({
        reversed: false,
      });
      expect(await loyalty().balanceOf(userId)).toBe(100);
      expect(await loyalty().ledgerFor(userId)).toHaveLength(1);
    });

    it('fails for good with OrderNotFound for an order that does not exist', async () => {
      const { acts } = activities();
      const failure = await failureOf(run(() => acts.reverseLoyaltyPoints({ orderId: 987_655 })));
      expect(failure.type).toBe(FailureType.OrderNotFound);
      expect(failure.nonRetryable).toBe(true);
    });
  });
});
