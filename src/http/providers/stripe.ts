import { z } from 'zod';
import { EVENT_ID_PATTERN } from '../../shared/constants';
import {
  amountMinorUnits,
  currencyCode,
  eventType,
  orderIdText,
  readPayment,
} from './payment-fields';
import { namedProvider, type ProviderNotification, type WebhookProvider } from './provider';
import { createStripeVerifier, type StripeSignatureOptions } from './stripe-signature';

export const STRIPE_WEBHOOK_PATH = '/api/v1/webhooks/stripe';

/**
 * The one Stripe event that is a payment here. `checkout.session.completed` is not: a Checkout
 * payment also emits `payment_intent.succeeded` for its PaymentIntent, and the two events have
 * two IDs, so taking both would record one payment twice (and flag it as a double charge). A
 * Checkout integration puts the order ID on the PaymentIntent instead
 * (`payment_intent_data.metadata.order_id`); docs/webhook-security.md says how.
 */
export const STRIPE_PAYMENT_EVENT = 'payment_intent.succeeded';

const eventSchema = z.object({
  id: z
    .string()
    .regex(EVENT_ID_PATTERN, 'id must be 1-200 characters of letters, digits and _ . : -'),
  type: eventType,
});

// The PaymentIntent of the event (`data.object`). Only what a payment needs is read; Stripe adds
// fields with every API version, and they are no concern of ours.
const paymentIntentSchema = z.object({
  data: z.object({
    object: z.object({
      // What was captured; `amount` is what was asked for, and the money taken is what counts.
      amount_received: amountMinorUnits,
      currency: currencyCode,
      metadata: z.object({ order_id: orderIdText.optional() }).loose(),
    }),
  }),
});

/**
 * A Stripe event (`{"id":"evt_…","type":…,"data":{"object":{…}}}`) as a notification:
 * `payment_intent.succeeded` is a payment of `amount_received` in `currency` for the order in
 * `metadata.order_id` (a string: Stripe metadata holds strings only); every other type is
 * acknowledged and ignored, as Stripe expects of an endpoint subscribed to more than it needs.
 */
const notificationSchema = eventSchema.loose().transform((body, ctx): ProviderNotification => {
  if (body.type !== STRIPE_PAYMENT_EVENT) return { handled: false, event: body.type };
  return readPayment(body, ctx, paymentIntentSchema, ({ data }) => {
    const { amount_received: amount, currency, metadata } = data.object;
    if (metadata.order_id === undefined) {
      // Not a payment of this shop (another product on the same Stripe account): a 4xx would
      // have Stripe retry it for three days and, in the end, disable the endpoint.
      return { handled: false, event: body.type, note: 'no metadata.order_id' };
    }
    const orderId = metadata.order_id;
    return { handled: true, event: body.type, eventId: body.id, orderId, amount, currency };
  });
});

/** Stripe, verified with `Stripe-Signature`; its events are keyed `stripe~<evt id>`. */
export function stripeProvider(options: StripeSignatureOptions): WebhookProvider {
  return namedProvider(
    'stripe',
    STRIPE_WEBHOOK_PATH,
    createStripeVerifier(options),
    notificationSchema,
  );
}
