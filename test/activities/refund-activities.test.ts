import { ApplicationFailure } from '@temporalio/common';
import { createRefundActivities } from '../../src/activities/refund-activities';
import { createLoyaltyRepository, createRefundsRepository } from '../../src/db';
import { FailureType } from '../../src/shared/errors';
import { ORDER_CONFIRMED_REASON, ORDER_REFUNDED_REASON } from '../../src/shared/loyalty';
import { refundRecordedSignal } from '../../src/shared/order';
import type { RefundEvent } from '../../src/shared/payment-events';
import { testDatabases } from '../../harness/databases';
import {
  inActivity,
  orderHandOver,
  recordingClient,
  useIntakeDatabase,
} from '../support/intake-activities';

// The refund activities, called directly (the workflow tests reach them only through a
// time-skipping server): what each writes, and what a second call after a retry writes.
describe.each(testDatabases)('refund activities ($name)', ({ create }) => {
  const database = useIntakeDatabase(create);
  const { unique } = database;
  let userSeq = 3_000;

  /** The activities over the test database, and the signals they sent. */
  function activities() {
    const { client, signalWithStart } = recordingClient();
    const acts = createRefundActivities({
      client,
      orders: database.orders,
      refunds: createRefundsRepository(database.handle.db),
      loyalty: createLoyaltyRepository(database.handle.db),
    });
    return { acts, signalWithStart };
  }

  const paidOrder = (totalAmount = 5_000, userId = ++userSeq) =>
    database.paidOrder({ totalAmount, userId });

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
    return inActivity(() => activities().acts.recordRefund(event)).then(() => event);
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
      expect(await inActivity(() => acts.recordRefund(event))).toEqual({ created: true, orderId });
      expect(await inActivity(() => acts.recordRefund(event))).toEqual({ created: false, orderId });
      expect(
        await inActivity(() =>
          acts.recordRefund({ ...event, eventId: unique('e'), paymentRef: 'x' }),
        ),
      ).toEqual({ created: true, orderId: null });
    });
  });

  describe('handOverRefundToOrder', () => {
    it("signals the order's workflow (starting it if need be) with the refund event", async () => {
      const { acts, signalWithStart } = activities();
      const event = { kind: 'refund' as const, eventId: unique('stripe~evt_re') };

      expect(await inActivity(() => acts.handOverRefundToOrder({ orderId: 42, event }))).toEqual({
        handedOver: true,
      });
      expect(signalWithStart).toHaveBeenCalledTimes(1);
      expect(signalWithStart).toHaveBeenCalledWith(
        ...orderHandOver(42, refundRecordedSignal, event),
      );
    });

    it('signals nothing once an order run finished with the event', async () => {
      const { paymentRef, orderId } = await paidOrder();
      const recorded = await refund(paymentRef, 100);
      await createRefundsRepository(database.handle.db).markHandled(recorded.eventId, 'chain-1');
      const { acts, signalWithStart } = activities();

      expect(
        await inActivity(() =>
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
      await inActivity(() =>
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

      expect(await inActivity(() => acts.applyRefunds({ orderId }))).toEqual({
        refundedAmount: 4_999,
        fullyRefunded: false,
        shipmentStatus: null,
        returnReviewRequested: false,
      });
      expect((await database.orders.findById(orderId))?.refundedAmount).toBe(4_999);
    });

    it('calls a paid order fully refunded when its refunds reach the total, by amounts', async () => {
      const { orderId, paymentRef } = await paidOrder(5_000);
      await refund(paymentRef, 2_000);
      await refund(paymentRef, 3_000);
      // A failed refund counts for nothing.
      await refund(paymentRef, 700, { status: 'failed' });
      await database.orders.setShipmentStatus(orderId, 'requested');
      const { acts } = activities();

      expect(await inActivity(() => acts.applyRefunds({ orderId }))).toEqual({
        refundedAmount: 5_000,
        fullyRefunded: true,
        shipmentStatus: 'requested',
        returnReviewRequested: false,
      });
      expect((await database.orders.findById(orderId))?.refundedAmount).toBe(5_000);
      // Applied again (a retry, or the next refund event): the same facts.
      expect(await inActivity(() => acts.applyRefunds({ orderId }))).toMatchObject({
        refundedAmount: 5_000,
        fullyRefunded: true,
      });
    });

    it('calls more than the total fully refunded too, and says when a return review was asked', async () => {
      const { orderId, paymentRef } = await paidOrder(5_000);
      await refund(paymentRef, 6_000, { kind: 'cumulative', refundId: undefined });
      await database.orders.requestReturnReview(orderId);
      const { acts } = activities();

      expect(await inActivity(() => acts.applyRefunds({ orderId }))).toMatchObject({
        refundedAmount: 6_000,
        fullyRefunded: true,
        returnReviewRequested: true,
      });
    });

    it('never calls a pending order fully refunded: it was not paid by the refunded payment', async () => {
      const { order } = await database.orders.createWithIdempotencyKey({
        userId: ++userSeq,
        customerEmail: 'buyer@example.com',
        totalAmount: 5_000,
      });
      await refund(unique('stripe~pi'), 5_000, { orderId: order.id });
      const { acts } = activities();

      expect(await inActivity(() => acts.applyRefunds({ orderId: order.id }))).toMatchObject({
        refundedAmount: 5_000,
        fullyRefunded: false,
      });
    });

    it('fails for good with OrderNotFound for an order that does not exist', async () => {
      const { acts } = activities();
      const failure = await failureOf(inActivity(() => acts.applyRefunds({ orderId: 987_654 })));
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
      expect(await inActivity(() => acts.requestReturnReview({ orderId }))).toEqual({
        flagged: true,
      });
      expect(await inActivity(() => acts.requestReturnReview({ orderId }))).toEqual({
        flagged: false,
      });
      expect((await database.orders.findById(orderId))?.returnReviewRequestedAt).not.toBeNull();
    });
  });

  describe('reverseLoyaltyPoints', () => {
    const loyalty = () => createLoyaltyRepository(database.handle.db);

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

      expect(await inActivity(() => acts.reverseLoyaltyPoints({ orderId }))).toEqual({
        reversed: true,
      });
      expect(await inActivity(() => acts.reverseLoyaltyPoints({ orderId }))).toEqual({
        reversed: false,
      });

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

      expect(
        await inActivity(() => acts.reverseLoyaltyPoints({ orderId: refunded.orderId })),
      ).toEqual({
        reversed: false,
      });
      expect(await loyalty().balanceOf(userId)).toBe(100);
      expect(await loyalty().ledgerFor(userId)).toHaveLength(1);
    });

    it('fails for good with OrderNotFound for an order that does not exist', async () => {
      const { acts } = activities();
      const failure = await failureOf(
        inActivity(() => acts.reverseLoyaltyPoints({ orderId: 987_655 })),
      );
      expect(failure.type).toBe(FailureType.OrderNotFound);
      expect(failure.nonRetryable).toBe(true);
    });
  });
});
