import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { SignalDefinition } from '@temporalio/common';
import { orderWorkflowId, type OrderEvent, type OrderWorkflow } from '../shared/order';
import { OrderIdSearchAttribute } from '../shared/search-attributes';

/** What a hand-over of an event to its order's workflow did. */
export interface HandOverResult {
  /** False: an order chain already finished with the event; nothing signalled or started. */
  handedOver: boolean;
}

/**
 * Signal-with-start of the order's workflow (`order-<id>`): starts it if need be and delivers the
 * event, atomically. A running order workflow ignores event IDs it has seen. One effect: each
 * caller runs it at its own crash point.
 */
export function signalOrderWorkflow<E extends OrderEvent>(
  client: Client,
  orderId: number,
  signal: SignalDefinition<[E]>,
  event: E,
): Promise<unknown> {
  return client.workflow.signalWithStart<OrderWorkflow, [E]>('orderWorkflow', {
    workflowId: orderWorkflowId(orderId),
    // Order work stays with the pool of workers whose payments feed it.
    taskQueue: Context.current().info.taskQueue,
    args: [{ orderId }],
    signal,
    signalArgs: [event],
    memo: { orderId },
    // Set at start, so `OrderId = 12` finds the run from its first event (the order workflow no
    // longer upserts it, patch 'local-order-steps'; older code still does).
    typedSearchAttributes: [{ key: OrderIdSearchAttribute, value: orderId }],
  });
}
