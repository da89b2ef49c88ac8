import { ApplicationFailure } from '@temporalio/common';
import type { Order, OrdersRepository } from '../db';
import { FailureType } from '../shared/errors';

/** The order, or OrderNotFound, non-retryable: no later attempt can make it exist. */
export async function findOrderOrFail(
  orders: Pick<OrdersRepository, 'findById'>,
  orderId: number,
): Promise<Order> {
  const order = await orders.findById(orderId);
  if (!order) {
    throw ApplicationFailure.create({
      type: FailureType.OrderNotFound,
      message: `order ${orderId} does not exist`,
      details: [{ orderId }],
      nonRetryable: true,
    });
  }
  return order;
}
