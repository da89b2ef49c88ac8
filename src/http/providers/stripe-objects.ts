import { z } from 'zod';
import type { DisputeEvent, RefundEvent } from '../../shared/payment-events';
import {
  amountAsSent,
  amountInRange,
  currencyCode,
  orderReference,
  readPayment,
} from './payment-fields';
import type { ProviderNotification } from './provider';

/*
 * The Stripe objects this shop acts on (PaymentIntent, Charge, Refund, Dispute), read as its
 * notifications: from a snapshot event's `data.object`, or from what a thin event's fetch returned.
 */
/**
 * The Stripe event that is a payment here. `checkout.session.completed` is not: a Checkout
 * payment also emits `payment_intent.succeeded` for its PaymentIntent, and the two events have
 * two IDs, so taking both would record one payment twice (and flag it as a double charge). A
 * Checkout integration puts the order ID on the PaymentIntent instead
 * (`payment_intent_data.metadata.order_id`); docs/webhook-security.md says how.
 */
export const STRIPE_PAYMENT_EVENT = 'payment_intent.succeeded';

/** Every Stripe event type acted on, by the object its `data.object` (or thin fetch) is. */
export const STRIPE_EVENT_TYPES = [
  STRIPE_PAYMENT_EVENT,
  'charge.refunded',
  'refund.created',
  'refund.updated',
  'charge.dispute.created',
  'charge.dispute.closed',
] as const;

export const stripeId = z.string().min(1).max(255);
const metadata = z.object({ order_id: z.string().optional() }).loose().optional();
/** `payment_intent` on charges, refunds and disputes: an ID, or the object when expanded. */
const intentRef = z
  .union([stripeId, z.object({ id: stripeId }).loose()])
  .nullable()
  .optional()
  .transform((ref) => (typeof ref === 'object' && ref !== null ? ref.id : (ref ?? undefined)));

// Only what each mapping needs is read; Stripe adds fields with every API version.
const paymentIntent = z.object({
  id: stripeId,
  // What was captured; `amount` is what was asked for, and the money taken is what counts.
  amount_received: amountAsSent,
  currency: currencyCode,
  metadata,
});
const charge = z.object({
  id: stripeId,
  payment_intent: intentRef,
  amount_refunded: amountAsSent,
  currency: currencyCode,
  metadata,
});
const refund = z.object({
  id: stripeId,
  payment_intent: intentRef,
  charge: z
    .union([stripeId, z.object({ id: stripeId }).loose()])
    .nullable()
    .optional(),
  amount: amountAsSent,
  currency: currencyCode,
  status: z.string().nullable().optional(),
  metadata,
});
const dispute = z.object({
  id: stripeId,
  payment_intent: intentRef,
  charge: z.union([stripeId, z.object({ id: stripeId }).loose()]).optional(),
  amount: amountAsSent,
  currency: currencyCode,
  status: z.string(),
  reason: z.string().nullable().optional(),
  evidence_details: z
    .object({ due_by: z.number().int().nullable().optional() })
    .loose()
    .nullable()
    .optional(),
});

/** What a Stripe object reads as: never a thin event, which only names its object. */
export type ObjectNotification = Exclude<ProviderNotification, { kind: 'thin' }>;

export type Read = (object: unknown, ctx: z.RefinementCtx, type: string) => ObjectNotification;

/** How each handled type's object reads: the HTTP route's snapshot events and the thin fetch's. */
const readers: Record<(typeof STRIPE_EVENT_TYPES)[number], Read> = {
  [STRIPE_PAYMENT_EVENT]: (object, ctx, type) =>
    readPayment(object, ctx, paymentIntent, (pi): ObjectNotification => {
      if (pi.metadata?.order_id === undefined) {
        // Not a payment of this shop (another product on the same Stripe account): a 4xx would
        // have Stripe retry it for three days and, in the end, disable the endpoint.
        return { kind: 'ignored', type, note: 'no metadata.order_id' };
      }
      if (!amountInRange(pi.amount_received)) return outOfRange(type, pi.amount_received, pi);
      return {
        kind: 'payment',
        type,
        orderRef: orderReference(pi.metadata.order_id),
        amount: pi.amount_received,
        currency: pi.currency,
        paymentRef: pi.id,
      };
    }),
  // The charge's refunded total so far: a partial refund, or the last one, by amounts.
  'charge.refunded': (object, ctx, type) =>
    readPayment(object, ctx, charge, (ch): ObjectNotification => {
      if (!amountInRange(ch.amount_refunded)) return outOfRange(type, ch.amount_refunded, ch);
      return {
        kind: 'refund',
        type,
        paymentRef: ch.payment_intent ?? ch.id,
        refund: {
          kind: 'cumulative',
          amount: ch.amount_refunded,
          currency: ch.currency,
          status: 'succeeded',
          ...orderIdOf(ch.metadata),
        },
      };
    }),
  'refund.created': readRefund,
  'refund.updated': readRefund,
  'charge.dispute.created': readDispute,
  'charge.dispute.closed': readDispute,
};

/**
 * The reader of a handled type. Own keys only: a type is the sender's text, and `constructor` or
 * `toString` would otherwise find the object's inherited functions (a 500 on every retry).
 */
export function readerOf(type: string): Read | undefined {
  return Object.hasOwn(readers, type) ? readers[type as keyof typeof readers] : undefined;
}

function readRefund(object: unknown, ctx: z.RefinementCtx, type: string): ObjectNotification {
  return readPayment(object, ctx, refund, (re): ObjectNotification => {
    if (!amountInRange(re.amount)) return outOfRange(type, re.amount, re);
    const chargeId = typeof re.charge === 'object' && re.charge !== null ? re.charge.id : re.charge;
    return {
      kind: 'refund',
      type,
      paymentRef: re.payment_intent ?? chargeId ?? re.id,
      refund: {
        kind: 'refund',
        refundId: re.id,
        amount: re.amount,
        currency: re.currency,
        status: refundStatus(re.status),
        ...orderIdOf(re.metadata),
      },
    };
  });
}

function readDispute(object: unknown, ctx: z.RefinementCtx, type: string): ObjectNotification {
  return readPayment(object, ctx, dispute, (dp): ObjectNotification => {
    if (!amountInRange(dp.amount)) return outOfRange(type, dp.amount, dp);
    const dueBy = dp.evidence_details?.due_by;
    const chargeId = typeof dp.charge === 'object' ? dp.charge.id : dp.charge;
    const result: Omit<DisputeEvent, 'eventId' | 'paymentRef'> = {
      disputeId: dp.id,
      amount: dp.amount,
      currency: dp.currency,
      status: disputeStatus(type, dp.status),
      ...(dueBy ? { evidenceDueBy: new Date(dueBy * 1000).toISOString() } : {}),
      ...(dp.reason ? { reason: dp.reason } : {}),
    };
    return {
      kind: 'dispute',
      type,
      paymentRef: dp.payment_intent ?? chargeId ?? dp.id,
      dispute: result,
    };
  });
}

/** `requires_action` waits on the customer: pending until Stripe reports it settled. */
function refundStatus(status: string | null | undefined): RefundEvent['status'] {
  switch (status) {
    case 'succeeded':
    case 'failed':
    case 'canceled':
      return status;
    default:
      return 'pending';
  }
}

/**
 * Opened on creation; on closing, `lost` is money gone and anything else (`won`, an inquiry's
 * `warning_closed`) leaves it with the shop.
 */
function disputeStatus(type: string, status: string): DisputeEvent['status'] {
  if (type === 'charge.dispute.created') return 'opened';
  return status === 'lost' ? 'lost' : 'won';
}

/** The order, when the object's metadata names one of ours: a hint for matching, never required. */
function orderIdOf(data: { order_id?: string } | undefined): { orderId?: number } {
  if (data?.order_id === undefined) return {};
  const ref = orderReference(data.order_id);
  return typeof ref === 'number' ? { orderId: ref } : {};
}

function outOfRange(type: string, amount: number, object: unknown): ObjectNotification {
  return {
    kind: 'unmatched',
    type,
    reason: 'amount_mismatch',
    note: `amount ${amount} cannot be an order's (1 to 2147483647 in the smallest unit)`,
    object,
  };
}

/**
 * A Stripe object of a handled event type, read as this shop's notification: the snapshot
 * event's `data.object`, or what a thin event's fetch returned. Other types are ignored.
 */
export function readStripeObject(type: string, object: unknown): ObjectNotification {
  const reader = readerOf(type);
  if (!reader) return { kind: 'ignored', type };
  // The object was fetched or delivered whole; a shape we cannot read is kept, not lost.
  const parsed = z
    .unknown()
    .transform((value, ctx) => reader(value, ctx, type))
    .safeParse(object);
  // A delivered object of the wrong shape is the sender's error (400); a fetched one is ours to keep.
  if (parsed.success) return parsed.data;
  return {
    kind: 'unmatched',
    type,
    reason: 'thin_unresolved',
    note: `the ${type} object could not be read: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    object,
  };
}
