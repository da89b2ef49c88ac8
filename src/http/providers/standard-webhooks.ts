import { createHash } from 'node:crypto';
import { z } from 'zod';
import { EVENT_ID_PATTERN, PAYMENT_SUCCEEDED_EVENT } from '../../shared/constants';
import { PAYMENT_DISPUTED_EVENT, PAYMENT_REFUNDED_EVENT } from './original';
import {
  amountAsSent,
  amountInRange,
  currencyCode,
  disputeStatus,
  eventType,
  evidenceDueBy,
  orderReference,
  readPayment,
} from './payment-fields';
import {
  providerEventId,
  type ProviderNotification,
  type WebhookProvider,
  webhookProvider,
} from './provider';
import { createStandardVerifier, type StandardSignatureOptions } from './standard-signature';

export const STANDARD_WEBHOOK_PATH = '/api/v1/webhooks/standard';

const PROVIDER = 'standard';

// A number, or text for senders whose metadata is text only; a reference that is not one of
// our order IDs is kept for an operator (orderReference).
const orderRef = z
  .union([z.number(), z.string().min(1).max(500)])
  .transform((value) => orderReference(value));
const reference = z.string().min(1).max(255);

const paymentSchema = z.object({
  data: z.object({
    order_id: orderRef,
    amount: amountAsSent,
    currency: currencyCode,
    payment_id: reference.optional(),
  }),
});

const refundSchema = z.object({
  data: z.object({
    order_id: orderRef.optional(),
    payment_id: reference,
    amount: amountAsSent,
    currency: currencyCode.optional(),
    refund_id: reference,
  }),
});

const disputeSchema = z.object({
  data: z.object({
    order_id: orderRef.optional(),
    payment_id: reference,
    amount: amountAsSent,
    currency: currencyCode.optional(),
    dispute_id: reference,
    status: disputeStatus,
    evidence_due_by: evidenceDueBy,
  }),
});

/**
 * The payload the spec recommends, `{"type","timestamp","data"}`, with our event in `data`
 * (docs/webhook-security.md): `payment.succeeded` `{"order_id","amount","currency","payment_id"?}`,
 * `payment.refunded` and `payment.disputed` as in the contract's scheme; every other type is
 * acknowledged and ignored. The event ID is not in the body: it is the signed `webhook-id`
 * header, the spec's idempotency key, which also names the payment when no `payment_id` does.
 */
const notificationSchema = z
  .object({ type: eventType })
  .loose()
  .transform((body, ctx): ProviderNotification => {
    const { type } = body;
    switch (type) {
      case PAYMENT_SUCCEEDED_EVENT:
        return readPayment(body, ctx, paymentSchema, ({ data }) =>
          amountInRange(data.amount)
            ? {
                kind: 'payment',
                type,
                orderRef: data.order_id,
                amount: data.amount,
                currency: data.currency,
                ...(data.payment_id === undefined ? {} : { paymentRef: data.payment_id }),
              }
            : outOfRange(type, data),
        );
      case PAYMENT_REFUNDED_EVENT:
        return readPayment(body, ctx, refundSchema, ({ data }) =>
          amountInRange(data.amount)
            ? {
                kind: 'refund',
                type,
                paymentRef: data.payment_id,
                refund: {
                  kind: 'refund',
                  refundId: data.refund_id,
                  amount: data.amount,
                  status: 'succeeded',
                  ...(data.currency === undefined ? {} : { currency: data.currency }),
                  ...orderIdOf(data.order_id),
                },
              }
            : outOfRange(type, data),
        );
      case PAYMENT_DISPUTED_EVENT:
        return readPayment(body, ctx, disputeSchema, ({ data }) =>
          amountInRange(data.amount)
            ? {
                kind: 'dispute',
                type,
                paymentRef: data.payment_id,
                dispute: {
                  disputeId: data.dispute_id,
                  amount: data.amount,
                  status: data.status,
                  ...(data.currency === undefined ? {} : { currency: data.currency }),
                  ...(data.evidence_due_by === undefined
                    ? {}
                    : { evidenceDueBy: data.evidence_due_by }),
                  ...orderIdOf(data.order_id),
                },
              }
            : outOfRange(type, data),
        );
      default:
        return { kind: 'ignored', type };
    }
  });

function orderIdOf(ref: number | string | undefined): { orderId?: number } {
  return typeof ref === 'number' ? { orderId: ref } : {};
}

function outOfRange(type: string, data: { amount: number }): ProviderNotification {
  return {
    kind: 'unmatched',
    type,
    reason: 'amount_mismatch',
    note: `amount ${data.amount} cannot be an order's (1 to 2147483647 in the smallest unit)`,
    object: data,
  };
}

/**
 * The dedup key of a `webhook-id`. The spec lets a sender use any characters (Svix's `msg_…`,
 * others base64 with `/`, `+`, `=`); a workflow ID and a log line want a safe alphabet. An ID
 * inside the event-ID alphabet keeps its readable key, `standard~<id>`; any other becomes
 * `standard~sha256~<hex of its SHA-256>`, which no readable key can take (`~` is outside that
 * alphabet) and which is the same on every retry. The original stays the payment's reference.
 */
export function standardEventKey(webhookId: string): string {
  if (EVENT_ID_PATTERN.test(webhookId)) return providerEventId(PROVIDER, webhookId);
  const digest = createHash('sha256').update(webhookId, 'utf8').digest('hex');
  return providerEventId(PROVIDER, `sha256~${digest}`);
}

/** A Standard Webhooks sender (Svix and others); its events are keyed by `standardEventKey`. */
export function standardWebhooksProvider(options: StandardSignatureOptions): WebhookProvider {
  return webhookProvider({
    name: PROVIDER,
    path: STANDARD_WEBHOOK_PATH,
    verify: createStandardVerifier(options),
    notification: notificationSchema,
    keys: { eventId: standardEventKey, paymentRef: (ref) => providerEventId(PROVIDER, ref) },
  });
}
