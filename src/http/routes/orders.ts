import { createHash } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import {
  type createOrdersRepository,
  type createPaymentsRepository,
  MAX_INTEGER_COLUMN,
  MAX_ROW_ID,
} from '../../db';
import { HttpError } from '../errors';
import { headerLines } from '../header-lines';
import type { OrdersAuth, OrdersCaller } from '../orders-auth';
import { withZodSchemas } from '../validation';

export interface OrdersRouteOptions {
  orders: ReturnType<typeof createOrdersRepository>;
  payments: ReturnType<typeof createPaymentsRepository>;
  auth: OrdersAuth;
}

const createOrderSchema = z.object({
  user_id: z.number().positive().max(MAX_INTEGER_COLUMN).int(),
  customer_email: z.email().max(320),
  total_amount: z.number().positive().max(MAX_INTEGER_COLUMN).int(),
});

// Printable ASCII, bounded: keys are stored and compared, never interpreted.
const idempotencyKeySchema = z
  .string()
  .regex(/^[\x21-\x7e]{1,255}$/, 'Idempotency-Key must be 1-255 printable ASCII characters');

// Plain decimal digits only: a coercing parse would read 1e3 as order 1000 and 0x10 as order 16.
// Beyond the database's range it names no order (and PostgreSQL would fail the query).
const INVALID_ORDER_ID = 'order id must be a positive integer';
const orderIdSchema = z
  .string()
  .regex(/^[1-9][0-9]*$/, INVALID_ORDER_ID)
  .transform(Number)
  .pipe(z.number().max(MAX_ROW_ID, INVALID_ORDER_ID));

const createOrderRoute = {
  body: createOrderSchema,
  // Only the key is checked here; a preValidation hook counts its raw header lines.
  headers: z.looseObject({ 'idempotency-key': idempotencyKeySchema.optional() }),
};

const getOrderRoute = { params: z.object({ id: orderIdSchema }) };

/** A reused Idempotency-Key with a different request is a 422, never someone else's order. */
export async function ordersRoutes(fastify: FastifyInstance, options: OrdersRouteOptions) {
  const app = withZodSchemas(fastify);
  const { auth } = options;
  app.post(
    '/api/v1/orders',
    {
      bodyLimit: 16 * 1024,
      schema: createOrderRoute,
      onRequest: auth.require('orders:write'),
      // Two keys are ambiguous: refused as such, before the schema reports a format error about
      // the ", " Node joins them with. Lines are counted: a key with a comma is still one key.
      preValidation: async (request) => {
        if (headerLines(request.raw.rawHeaders, 'idempotency-key').length > 1) {
          throw new HttpError(400, 'exactly one Idempotency-Key header is allowed');
        }
      },
    },
    async (request, reply) => {
      const body = request.body;
      const idempotencyKey = request.headers['idempotency-key'];
      const result = await options.orders.createWithIdempotencyKey({
        userId: body.user_id,
        customerEmail: body.customer_email,
        totalAmount: body.total_amount,
        idempotencyKey,
        fingerprint: idempotencyKey === undefined ? undefined : fingerprintOf(body),
      });
      switch (result.kind) {
        case 'created':
          return reply
            .code(201)
            .header('location', `/api/v1/orders/${result.order.id}`)
            .send(orderToWire(result.order, auth.callerOf(request)));
        case 'replayed':
          return reply
            .code(200)
            .header('idempotent-replayed', 'true')
            .send(orderToWire(result.order, auth.callerOf(request)));
        case 'key_reused_with_different_request':
          throw new HttpError(
            422,
            'Idempotency-Key was already used with a different request body',
          );
      }
    },
  );

  app.get(
    '/api/v1/orders/:id',
    { schema: getOrderRoute, onRequest: auth.require('orders:read') },
    async (request) => {
      const { id } = request.params;
      const order = await options.orders.findById(id);
      if (!order) throw new HttpError(404, `order ${id} not found`);
      const payments = await options.payments.listByOrder(order.id);
      return {
        ...orderToWire(order, auth.callerOf(request)),
        payments: payments.map((p) => ({
          id: p.id,
          provider_event_id: p.providerEventId,
          amount: p.amount,
          created_at: p.createdAt,
        })),
      };
    },
  );
}

type Order = NonNullable<Awaited<ReturnType<OrdersRouteOptions['orders']['findById']>>>;

/** Without `orders:read:pii` the address is left out, not masked: no part of it, unambiguous. */
function orderToWire(order: Order, caller: OrdersCaller) {
  return {
    id: order.id,
    user_id: order.userId,
    ...(caller.scopes.has('orders:read:pii') ? { customer_email: order.customerEmail } : {}),
    status: order.status,
    total_amount: order.totalAmount,
    shipment_status: order.shipmentStatus,
    confirmation_sent_at: order.confirmationSentAt,
    // Set on a double charge or a payment that is not the total.
    refund_review_requested_at: order.refundReviewRequestedAt,
    // A full refund after the warehouse took the order also sets return_review_requested_at.
    refunded_amount: order.refundedAmount,
    return_review_requested_at: order.returnReviewRequestedAt,
    dispute_status: order.disputeStatus,
    dispute_closed_at: order.disputeClosedAt,
    settlement: order.settlement && {
      settled_by: order.settlement.settledBy,
      settled_at: order.settlement.settledAt,
      reason: order.settlement.reason,
      payment_ids: order.settlement.paymentIds,
    },
    created_at: order.createdAt,
    updated_at: order.updatedAt,
  };
}

function fingerprintOf(body: z.infer<typeof createOrderSchema>): string {
  const canonical = JSON.stringify([body.user_id, body.customer_email, body.total_amount]);
  return createHash('sha256').update(canonical).digest('hex');
}
