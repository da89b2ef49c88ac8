import { z } from 'zod';
import { EVENT_ID_PATTERN, PAYMENT_SUCCEEDED_EVENT } from '../../shared/constants';
import { createWebhookVerifier, type WebhookAuthOptions } from '../webhook-auth';
import { amountMinorUnits, eventType, orderIdNumber, readPayment } from './payment-fields';
import type { ProviderNotification, WebhookProvider } from './provider';

/** The contract's endpoint (DESIGN.md): unchanged, whatever other providers are configured. */
export const PAYMENT_WEBHOOK_PATH = '/api/v1/webhooks/payment';

const paymentSucceededSchema = z.object({
  id: z
    .string()
    .regex(EVENT_ID_PATTERN, 'id must be 1-200 characters of letters, digits and _ . : -'),
  event: z.literal(PAYMENT_SUCCEEDED_EVENT),
  order_id: orderIdNumber,
  amount: amountMinorUnits,
});

/**
 * The contract's notification, `{"id","event","order_id","amount"}`: any event type is
 * acknowledged, and only payment.succeeded must be a whole payment (its problems are reported
 * as the fields that failed). Amounts are in the shop's currency: the contract has no other.
 */
const notificationSchema = z
  .object({ event: eventType })
  .loose()
  .transform((body, ctx): ProviderNotification => {
    if (body.event !== PAYMENT_SUCCEEDED_EVENT) return { handled: false, event: body.event };
    return readPayment(body, ctx, paymentSucceededSchema, ({ id, event, order_id, amount }) => ({
      handled: true,
      event,
      eventId: id,
      orderId: order_id,
      amount,
    }));
  });

/**
 * The original provider: X-Payment-Signature (plain or timestamped HMAC). Its event IDs stay
 * unqualified, so its workflow IDs stay `payment-<event id>` as the contract and every run
 * already started under it say.
 */
export function originalProvider(options: WebhookAuthOptions): WebhookProvider {
  return {
    name: 'payment',
    path: PAYMENT_WEBHOOK_PATH,
    verify: createWebhookVerifier(options),
    notification: notificationSchema,
    qualifyEventId: (eventId) => eventId,
  };
}
