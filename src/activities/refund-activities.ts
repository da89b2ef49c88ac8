import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { LoyaltyRepository, OrdersRepository, RefundsRepository } from '../db';
import { ORDER_CONFIRMED_REASON, ORDER_REFUNDED_REASON } from '../shared/loyalty';
import { refundRecordedSignal, type OrderRefundEvent } from '../shared/order';
import { refundedTotal, type RefundEvent } from '../shared/payment-events';
import type { ShipmentStatus } from '../db/schema';
import { atCrashPoint } from './crash-points';
import { signalOrderWorkflow, type HandOverResult } from './order-hand-over';
import { findOrderOrFail } from './order-lookup';

export interface RefundActivityDeps {
  client: Client;
  orders: OrdersRepository;
  refunds: RefundsRepository;
  loyalty: LoyaltyRepository;
}

/** Where an order stands after its refunds were added up. */
export interface RefundFacts {
  refundedAmount: number;
  /** The refunds add up to what paid the order (its total): decided by amounts. */
  fullyRefunded: boolean;
  shipmentStatus: ShipmentStatus | null;
  /** A person was asked to review a return: the workflow leaves the shipment to them. */
  returnReviewRequested: boolean;
}

/** Activities of refunds: their intake, and what the order workflow does about them. */
export function createRefundActivities(deps: RefundActivityDeps) {
  return {
    /**
     * Records a refund event once (UNIQUE provider event ID) and finds its order through the
     * payment's reference; null while that payment is not recorded (it claims the refund then).
     */
    async recordRefund(event: RefundEvent): Promise<{ created: boolean; orderId: number | null }> {
      const recorded = await atCrashPoint('recordRefund.commit', () => deps.refunds.record(event));
      Context.current().log.info(recorded.created ? 'refund recorded' : 'refund already recorded', {
        eventId: event.eventId,
        paymentRef: event.paymentRef,
        orderId: recorded.orderId,
      });
      return recorded;
    },

    /** As handOverToOrder, for a refund: not once an order run finished with the event. */
    async handOverRefundToOrder(input: {
      orderId: number;
      event: OrderRefundEvent;
    }): Promise<HandOverResult> {
      if (await deps.refunds.handledBy(input.event.eventId)) return { handedOver: false };
      await atCrashPoint('handOverRefundToOrder.signal', () =>
        signalOrderWorkflow(deps.client, input.orderId, refundRecordedSignal, input.event),
      );
      return { handedOver: true };
    },

    /** Adds up the order's recorded refunds and records the total on the order. */
    async applyRefunds(input: { orderId: number }): Promise<RefundFacts> {
      const order = await findOrderOrFail(deps.orders, input.orderId);
      const refundedAmount = refundedTotal(await deps.refunds.forOrder(input.orderId));
      await atCrashPoint('applyRefunds.commit', () =>
        deps.orders.setRefundedAmount(input.orderId, refundedAmount),
      );
      return {
        refundedAmount,
        fullyRefunded: order.status === 'paid' && refundedAmount >= order.totalAmount,
        shipmentStatus: order.shipmentStatus,
        returnReviewRequested: order.returnReviewRequestedAt !== null,
      };
    },

    /** Flags a fully refunded order that the warehouse already took for a return review. */
    async requestReturnReview(input: { orderId: number }): Promise<{ flagged: boolean }> {
      const flagged = await atCrashPoint('requestReturnReview.commit', () =>
        deps.orders.requestReturnReview(input.orderId),
      );
      return { flagged };
    },

    /**
     * Takes back the points of a fully refunded order, once (the ledger's UNIQUE (order,
     * reason)), and only when they were awarded.
     */
    async reverseLoyaltyPoints(input: { orderId: number }): Promise<{ reversed: boolean }> {
      const order = await findOrderOrFail(deps.orders, input.orderId);
      const award = (await deps.loyalty.ledgerFor(order.userId)).find(
        (e) => e.orderId === order.id && e.reason === ORDER_CONFIRMED_REASON,
      );
      if (!award) return { reversed: false };
      const result = await atCrashPoint('reverseLoyaltyPoints.commit', () =>
        deps.loyalty.awardForOrder({
          userId: order.userId,
          orderId: order.id,
          points: -award.points,
          reason: ORDER_REFUNDED_REASON,
        }),
      );
      return { reversed: result.awarded };
    },
  };
}

export type RefundActivities = ReturnType<typeof createRefundActivities>;
