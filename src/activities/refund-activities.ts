import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import type { LoyaltyRepository, OrdersRepository, RefundsRepository } from '../db';
import { FailureType } from '../shared/errors';
import { ORDER_CONFIRMED_REASON, ORDER_REFUNDED_REASON } from '../shared/loyalty';
import {
  orderWorkflowId,
  refundRecordedSignal,
  type OrderRefundEvent,
  type OrderWorkflow,
} from '../shared/order';
import { refundedTotal, type RefundEvent } from '../shared/payment-events';
import { OrderIdSearchAttribute } from '../shared/search-attributes';
import type { ShipmentStatus } from '../db/schema';
import type { HandOverResult } from './order-activities';
import { atCrashPoint } from './crash-points';

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
  async function orderOf(orderId: number) {
    const order = await deps.orders.findById(orderId);
    if (!order) {
      throw ApplicationFailure.create({
        type: FailureType.OrderNotFound,
        message: `order ${orderId} does not exist`,
        nonRetryable: true,
      });
    }
    return order;
  }

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
        deps.client.workflow.signalWithStart<OrderWorkflow, [OrderRefundEvent]>('orderWorkflow', {
          workflowId: orderWorkflowId(input.orderId),
          taskQueue: Context.current().info.taskQueue,
          args: [{ orderId: input.orderId }],
          signal: refundRecordedSignal,
          signalArgs: [input.event],
          memo: { orderId: input.orderId },
          typedSearchAttributes: [{ key: OrderIdSearchAttribute, value: input.orderId }],
        }),
      );
      return { handedOver: true };
    },

    /** Adds up the order's recorded refunds and records the total on the order. */
    async applyRefunds(input: { orderId: number }): Promise<RefundFacts> {
      const order = await orderOf(input.orderId);
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
      const order = await orderOf(input.orderId);
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
