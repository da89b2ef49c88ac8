import type { OrdersRepository } from '../../src/db';

type Order = Awaited<ReturnType<OrdersRepository['createWithIdempotencyKey']>>['order'];

/** An order as the shop creates it, for tests that pay it: user 1, 5400, unless told otherwise. */
export async function createTestOrder(
  orders: OrdersRepository,
  fields: { userId?: number; customerEmail?: string; totalAmount?: number } = {},
): Promise<Order> {
  const { order } = await orders.createWithIdempotencyKey({
    userId: 1,
    customerEmail: 'buyer@example.com',
    totalAmount: 5400,
    ...fields,
  });
  return order;
}
