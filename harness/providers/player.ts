import { randomBytes } from 'node:crypto';
import Stripe from 'stripe';
import { Webhook } from 'standardwebhooks';
import type { Config } from '../../src/config';
import { STANDARD_WEBHOOK_PATH } from '../../src/http/providers/standard-webhooks';
import { STRIPE_WEBHOOK_PATH } from '../../src/http/providers/stripe';
import { PAYMENT_WEBHOOK_PATH } from '../../src/http/routes/payment-webhook';
import { signBody } from '../../src/http/signature';

/**
 * Plays a payment provider against a running stack, signing as the real one does: Stripe and
 * Standard Webhooks deliveries are signed by their official libraries (dev dependencies, like
 * the tests'), never by our own verifier's code, so the demo and the e2e test prove something.
 * Each attempt is signed afresh at the time it is sent, as both providers do on a retry.
 */

export const PROVIDERS = ['payment', 'stripe', 'standard'] as const;
export type ProviderName = (typeof PROVIDERS)[number];

/** One event of the provider: its ID (what dedups it) and the exact bytes it sends. */
export interface ProviderEvent {
  id: string;
  body: string;
  /** Of a payment: what the provider's refunds and disputes name it by (`pi_…`, payment_id). */
  paymentRef?: string;
}

export interface Reply {
  status: number;
  text: string;
}

export interface DeliveryOptions {
  /** Unix seconds to sign at (default: now): an old one plays a replay. */
  signedAt?: number;
  /** Signs with a secret that is not the endpoint's: a forgery. */
  forged?: boolean;
}

export interface ProviderPlayer {
  readonly name: ProviderName;
  readonly path: string;
  /** The provider's payment event for an order (in `currency`, default the shop's). */
  payment(orderId: number, amount: number, currency?: string): ProviderEvent;
  /** Another event type about the same payment, one this service does not act on. */
  other(type: string, orderId: number, amount: number): ProviderEvent;
  /** A refund of `amount` of a payment this player made. */
  refund(payment: ProviderEvent, orderId: number, amount: number): ProviderEvent;
  /** A dispute opened on a payment this player made, evidence due in a week. */
  dispute(payment: ProviderEvent, orderId: number, amount: number): ProviderEvent;
  deliver(event: ProviderEvent, options?: DeliveryOptions): Promise<Reply>;
  /** The payment workflow an event of this provider starts. */
  workflowId(event: ProviderEvent): string;
}

const FORGED_STRIPE_SECRET = 'whsec_not_the_endpoint_secret';
const FORGED_STANDARD_SECRET = `whsec_${Buffer.from('not-the-endpoint-secret').toString('base64')}`;

type PlayerConfig = Pick<
  Config,
  'PAYMENT_WEBHOOK_SECRET' | 'STRIPE_WEBHOOK_SECRETS' | 'STANDARD_WEBHOOK_SECRETS' | 'SHOP_CURRENCY'
>;

export function providerPlayer(
  name: ProviderName,
  baseUrl: string,
  config: PlayerConfig,
): ProviderPlayer {
  const post = async (path: string, body: string, headers: Record<string, string>) => {
    const response = await fetch(new URL(path, baseUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });
    return { status: response.status, text: await response.text() };
  };
  const fresh = (prefix: string) => `${prefix}_${randomBytes(8).toString('hex')}`;
  const nowSeconds = () => Math.floor(Date.now() / 1000);

  switch (name) {
    case 'payment': {
      // The contract's event carries its ID in the body.
      const contractEvent = (type: string, orderId: number, amount: number) => {
        const id = fresh('evt');
        return event(id, { id, event: type, order_id: orderId, amount });
      };
      const about = (type: string, payment: ProviderEvent, fields: object) => {
        const id = fresh('evt');
        return event(id, { id, event: type, payment_id: payment.id, ...fields });
      };
      return {
        name,
        path: PAYMENT_WEBHOOK_PATH,
        payment: (orderId, amount) => contractEvent('payment.succeeded', orderId, amount),
        other: contractEvent,
        refund: (payment, orderId, amount) =>
          about('payment.refunded', payment, { order_id: orderId, amount, refund_id: fresh('rf') }),
        dispute: (payment, orderId, amount) =>
          about('payment.disputed', payment, {
            order_id: orderId,
            amount,
            dispute_id: fresh('dp'),
            status: 'opened',
            evidence_due_by: inAWeek(),
          }),
        deliver: (e, options = {}) =>
          post(PAYMENT_WEBHOOK_PATH, e.body, {
            'x-payment-signature': options.forged
              ? 'f'.repeat(64)
              : signBody(e.body, config.PAYMENT_WEBHOOK_SECRET),
          }),
        workflowId: (e) => `payment-${e.id}`,
      };
    }
    case 'stripe': {
      const secret = firstSecret(config.STRIPE_WEBHOOK_SECRETS, 'STRIPE_WEBHOOK_SECRETS');
      const webhooks = new Stripe('sk_test_demo_never_used').webhooks;
      const snapshot = (type: string, object: object) => {
        const id = fresh('evt');
        const body = { id, object: 'event', type, created: nowSeconds(), livemode: false };
        return { id, body: { ...body, data: { object } } };
      };
      const stripeEvent = (type: string, orderId: number, amount: number, currency: string) => {
        const paymentRef = fresh('pi');
        const { id, body } = snapshot(type, {
          id: paymentRef,
          object: 'payment_intent',
          amount,
          amount_received: type === 'payment_intent.created' ? 0 : amount,
          currency,
          metadata: { order_id: String(orderId) },
        });
        return { ...event(id, body), paymentRef };
      };
      const about = (type: string, object: object) => {
        const { id, body } = snapshot(type, object);
        return event(id, body);
      };
      return {
        name,
        path: STRIPE_WEBHOOK_PATH,
        payment: (orderId, amount, currency = config.SHOP_CURRENCY) =>
          stripeEvent('payment_intent.succeeded', orderId, amount, currency),
        other: (type, orderId, amount) => stripeEvent(type, orderId, amount, config.SHOP_CURRENCY),
        // charge.refunded: the charge's refunded total so far, which is what Stripe reports.
        refund: (payment, orderId, amount) =>
          about('charge.refunded', {
            id: fresh('ch'),
            object: 'charge',
            payment_intent: payment.paymentRef,
            amount_refunded: amount,
            currency: config.SHOP_CURRENCY,
            metadata: { order_id: String(orderId) },
          }),
        dispute: (payment, _orderId, amount) =>
          about('charge.dispute.created', {
            id: fresh('dp'),
            object: 'dispute',
            payment_intent: payment.paymentRef,
            amount,
            currency: config.SHOP_CURRENCY,
            status: 'needs_response',
            reason: 'fraudulent',
            evidence_details: { due_by: Math.floor(Date.parse(inAWeek()) / 1000) },
          }),
        deliver: (e, options = {}) =>
          post(STRIPE_WEBHOOK_PATH, e.body, {
            'stripe-signature': webhooks.generateTestHeaderString({
              payload: e.body,
              secret: options.forged ? FORGED_STRIPE_SECRET : secret,
              timestamp: options.signedAt ?? nowSeconds(),
            }),
          }),
        workflowId: (e) => `payment-stripe~${e.id}`,
      };
    }
    case 'standard': {
      const secret = firstSecret(config.STANDARD_WEBHOOK_SECRETS, 'STANDARD_WEBHOOK_SECRETS');
      const standardEvent = (type: string, data: object) => {
        const id = fresh('msg');
        // Without a payment_id the webhook-id names the payment.
        return {
          ...event(id, { type, timestamp: new Date().toISOString(), data }),
          paymentRef: id,
        };
      };
      return {
        name,
        path: STANDARD_WEBHOOK_PATH,
        payment: (orderId, amount, currency = config.SHOP_CURRENCY) =>
          standardEvent('payment.succeeded', { order_id: orderId, amount, currency }),
        other: (type, orderId, amount) =>
          standardEvent(type, { order_id: orderId, amount, currency: config.SHOP_CURRENCY }),
        refund: (payment, orderId, amount) =>
          standardEvent('payment.refunded', {
            order_id: orderId,
            payment_id: payment.paymentRef,
            amount,
            refund_id: fresh('rf'),
          }),
        dispute: (payment, orderId, amount) =>
          standardEvent('payment.disputed', {
            order_id: orderId,
            payment_id: payment.paymentRef,
            amount,
            dispute_id: fresh('dp'),
            status: 'opened',
            evidence_due_by: inAWeek(),
          }),
        deliver: (e, options = {}) => {
          const signedAt = options.signedAt ?? nowSeconds();
          const signer = new Webhook(options.forged ? FORGED_STANDARD_SECRET : secret);
          return post(STANDARD_WEBHOOK_PATH, e.body, {
            'webhook-id': e.id,
            'webhook-timestamp': String(signedAt),
            'webhook-signature': signer.sign(e.id, new Date(signedAt * 1000), e.body),
          });
        },
        workflowId: (e) => `payment-standard~${e.id}`,
      };
    }
  }
}

function inAWeek(): string {
  return new Date(Date.now() + 7 * 86_400_000).toISOString();
}

function event(id: string, payload: object): ProviderEvent {
  return { id, body: JSON.stringify(payload) };
}

function firstSecret(secrets: readonly string[], variable: string): string {
  const [secret] = secrets;
  if (secret === undefined) {
    throw new Error(`${variable} is not set: the stack does not serve this provider's endpoint`);
  }
  return secret;
}
