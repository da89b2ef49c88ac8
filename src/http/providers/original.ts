import { z } from 'zod';
import { PAYMENT_SUCCEEDED_EVENT } from '../../shared/constants';
import { createWebhookVerifier, type WebhookAuthOptions } from '../webhook-auth';
import {
  amountMinorUnits,
  disputeStatus,
  eventIdText,
  eventType,
  evidenceDueBy,
  orderIdNumber,
  readPayment,
} from './payment-fields';
import { type ProviderNotification, type WebhookProvider, webhookProvider } from './provider';

/** The contract's endpoint (DESIGN.md): unchanged, whatever other providers are configured. */
export const PAYMENT_WEBHOOK_PATH = '/api/v1/webhooks/payment';

/** A refund of a payment, in the contract's scheme and (as `type`) the Standard Webhooks one. */
export const PAYMENT_REFUNDED_EVENT = 'payment.refunded';
/** A dispute opened or closed on a payment, in both schemes likewise. */
export const PAYMENT_DISPUTED_EVENT = 'payment.disputed';

const paymentSucceededSchema = z.object({
  id: eventIdText,
  event: z.literal(PAYMENT_SUCCEEDED_EVENT),
  order_id: orderIdNumber,
  amount: amountMinorUnits,
});

// `payment_id` is the `id` of the payment.succeeded event that paid: the payment's reference.
const paymentRefundedSchema = z.object({
  id: eventIdText,
  order_id: orderIdNumber,
  payment_id: eventIdText,
  amount: amountMinorUnits,
  refund_id: eventIdText,
});

const paymentDisputedSchema = z.object({
  id: eventIdText,
  order_id: orderIdNumber,
  payment_id: eventIdText,
  amount: amountMinorUnits,
  dispute_id: eventIdText,
  status: disputeStatus,
  evidence_due_by: evidenceDueBy,
});

/**
 * The contract's notification, `{"id","event","order_id","amount"}` (docs/webhook-security.md):
 * `payment.succeeded`, `payment.refunded` and `payment.disputed` must be whole (their problems
 * are reported as the fields that failed, 400); any other event type is acknowledged. Amounts
 * are in the shop's currency: the contract has no other.
 */
const notificationSchema = z
  .object({ event: eventType })
  .loose()
  .transform((body, ctx): ProviderNotification => {
    switch (body.event) {
      case PAYMENT_SUCCEEDED_EVENT:
        return readPayment(body, ctx, paymentSucceededSchema, (p) => ({
          kind: 'payment',
          type: p.event,
          id: p.id,
          orderRef: p.order_id,
          amount: p.amount,
        }));
      case PAYMENT_REFUNDED_EVENT:
        return readPayment(body, ctx, paymentRefundedSchema, (r) => ({
          kind: 'refund',
          type: body.event,
          id: r.id,
          paymentRef: r.payment_id,
          refund: {
            kind: 'refund',
            refundId: r.refund_id,
            amount: r.amount,
            status: 'succeeded',
            orderId: r.order_id,
          },
        }));
      case PAYMENT_DISPUTED_EVENT:
        return readPayment(body, ctx, paymentDisputedSchema, (d) => ({
          kind: 'dispute',
          type: body.event,
          id: d.id,
          paymentRef: d.payment_id,
          dispute: {
            disputeId: d.dispute_id,
            amount: d.amount,
            status: d.status,
            orderId: d.order_id,
            ...(d.evidence_due_by === undefined ? {} : { evidenceDueBy: d.evidence_due_by }),
          },
        }));
      default:
        return { kind: 'ignored', type: body.event };
    }
  });

/**
 * The original provider: X-Payment-Signature (plain or timestamped HMAC). Its event IDs stay
 * unqualified, so its workflow IDs stay `payment-<event id>` as the contract and every run
 * already started under it say.
 */
export function originalProvider(options: WebhookAuthOptions): WebhookProvider {
  return webhookProvider({
    name: 'payment',
    path: PAYMENT_WEBHOOK_PATH,
    verify: createWebhookVerifier(options),
    notification: notificationSchema,
    keys: { eventId: (id) => id, paymentRef: (ref) => ref },
  });
}
