import { z } from 'zod';
import { PAYMENT_SUCCEEDED_EVENT } from '../../shared/constants';
import {
  amountMinorUnits,
  currencyCode,
  eventType,
  orderIdNumber,
  orderIdText,
  readPayment,
} from './payment-fields';
import { namedProvider, type ProviderNotification, type WebhookProvider } from './provider';
import { createStandardVerifier, type StandardSignatureOptions } from './standard-signature';

export const STANDARD_WEBHOOK_PATH = '/api/v1/webhooks/standard';

const paymentSchema = z.object({
  data: z.object({
    // A number, or digits in a string for senders whose metadata is text only.
    order_id: z.union([orderIdNumber, orderIdText]),
    amount: amountMinorUnits,
    currency: currencyCode,
  }),
});

/**
 * The payload the spec recommends, `{"type","timestamp","data"}`, with our event in `data`:
 * `payment.succeeded` is `{"order_id","amount","currency"}` (amount in the currency's smallest
 * unit); every other type is acknowledged and ignored. The event ID is not in the body: it is the
 * signed `webhook-id` header, the spec's idempotency key.
 */
const notificationSchema = z
  .object({ type: eventType })
  .loose()
  .transform((body, ctx): ProviderNotification => {
    if (body.type !== PAYMENT_SUCCEEDED_EVENT) return { handled: false, event: body.type };
    return readPayment(body, ctx, paymentSchema, ({ data }) => ({
      handled: true,
      event: body.type,
      orderId: data.order_id,
      amount: data.amount,
      currency: data.currency,
    }));
  });

/** A Standard Webhooks sender (Svix and others); its events are keyed `standard~<webhook-id>`. */
export function standardWebhooksProvider(options: StandardSignatureOptions): WebhookProvider {
  return namedProvider(
    'standard',
    STANDARD_WEBHOOK_PATH,
    createStandardVerifier(options),
    notificationSchema,
  );
}
