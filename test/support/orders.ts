import type { Client } from '@temporalio/client';
import type { Duration } from '@temporalio/common';
import { sql } from 'kysely';
import type { DatabaseHandle, OrdersRepository } from '../../src/db';
import { PAYMENTS_TASK_QUEUE, paymentWorkflowId } from '../../src/shared/constants';
import { uniqueEventId } from './webhook';

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

/**
 * Starts the payment workflow for an order on task queue `payments`, as the webhook's starter
 * would, with a fresh event ID and an execution timeout so a stuck run fails the test.
 */
export function startPaymentWorkflow(client: Client, orderId: number, timeout: Duration) {
  const eventId = uniqueEventId();
  return client.workflow.start('paymentWorkflow', {
    taskQueue: PAYMENTS_TASK_QUEUE,
    workflowId: paymentWorkflowId(eventId),
    args: [{ eventId, orderId, amount: 5400 }],
    workflowExecutionTimeout: timeout,
  });
}

/**
 * Makes the database's next order ID `first`, on either dialect. Test files that run the same
 * cases on SQLite and PostgreSQL against one Temporal server and one warehouse simulator give
 * each database its own range, so `order-<id>` workflow IDs, alert IDs and the warehouse's
 * idempotency keys of one database never meet the other's.
 */
export async function startOrderIdsAt(db: DatabaseHandle, first: number): Promise<void> {
  if (db.dialect === 'postgres') {
    await sql`select setval(pg_get_serial_sequence('orders', 'id'), ${first - 1})`.execute(db.db);
    return;
  }
  await sql`delete from sqlite_sequence where name = 'orders'`.execute(db.db);
  await sql`insert into sqlite_sequence (name, seq) values ('orders', ${first - 1})`.execute(db.db);
}
