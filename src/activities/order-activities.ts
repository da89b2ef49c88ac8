import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import type { OrdersRepository } from '../db';
import { FailureType } from '../shared/errors';
import {
  type OrderPaymentEvent,
  type OrderWorkflow,
  orderWorkflowId,
  paymentRecordedSignal,
} from '../shared/order';
import { OrderIdSearchAttribute } from '../shared/search-attributes';
import { atCrashPoint } from './crash-points';

export interface OrderActivityDeps {
  /** Temporal client on the worker's own connection, for signal-with-start. */
  client: Client;
  orders: OrdersRepository;
}

/** Activities that feed and serve the order entity workflow. */
export function createOrderActivities(deps: OrderActivityDeps) {
  return {
    /**
     * Hands a recorded payment to the order's workflow: signal-with-start starts `order-<id>` if
     * it is not running and delivers the event either way, atomically. A retry may deliver the
     * event twice; the order workflow ignores event IDs it has seen.
     */
    async handOverToOrder(input: { orderId: number; event: OrderPaymentEvent }): Promise<void> {
      await atCrashPoint('handOverToOrder.signal', () =>
        deps.client.workflow.signalWithStart<OrderWorkflow, [OrderPaymentEvent]>('orderWorkflow', {
          workflowId: orderWorkflowId(input.orderId),
          // The queue this payment runs on (`payments` in production): order work stays with the
          // same pool of workers as the payments that feed it.
          taskQueue: Context.current().info.taskQueue,
          args: [{ orderId: input.orderId }],
          signal: paymentRecordedSignal,
          signalArgs: [input.event],
          memo: { orderId: input.orderId },
          // Set at start, so `OrderId = 12` finds the run from its first event (the order
          // workflow no longer upserts it, patch 'local-order-steps'; older code still does).
          typedSearchAttributes: [{ key: OrderIdSearchAttribute, value: input.orderId }],
        }),
      );
    },

    /** Flags the order for a refund review; idempotent (the first flag stays). */
    async requestRefundReview(input: { orderId: number; eventId: string }): Promise<void> {
      const order = await deps.orders.findById(input.orderId);
      if (!order) {
        throw ApplicationFailure.create({
          type: FailureType.OrderNotFound,
          message: `order ${input.orderId} does not exist`,
          nonRetryable: true,
        });
      }
      await atCrashPoint('requestRefundReview.commit', () =>
        deps.orders.requestRefundReview(input.orderId),
      );
    },
  };
}
