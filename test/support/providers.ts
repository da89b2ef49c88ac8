import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import Stripe from 'stripe';
import { Webhook } from 'standardwebhooks';
import { STANDARD_WEBHOOK_PATH } from '../../src/http/providers/standard-webhooks';
import { STRIPE_WEBHOOK_PATH } from '../../src/http/providers/stripe';
import { uniqueEventId } from './webhook';

/*
 * The providers' official libraries, as test dependencies only: they sign what our endpoints
 * must accept, and their own verifiers say what must be refused. src/ never imports them.
 */

export const TEST_STRIPE_SECRET = 'whsec_test_stripe_endpoint_secret_0001';
export const TEST_STANDARD_SECRET = `whsec_${Buffer.from('test-standard-webhooks-key-0001').toString('base64')}`;

/** Stripe's webhook helpers; the API key is never used (nothing here calls Stripe). */
export const stripeWebhooks = new Stripe('sk_test_never_used').webhooks;

/** A `payment_intent.succeeded` event as Stripe sends it (trimmed to what matters and a bit more). */
export function stripePaymentIntentEvent(
  overrides: {
    id?: string;
    type?: string;
    orderId?: string | null;
    amount?: number;
    currency?: string;
  } = {},
) {
  const amount = overrides.amount ?? 5400;
  return {
    id: overrides.id ?? uniqueEventId('evt'),
    object: 'event',
    api_version: '2025-01-27.acacia',
    created: 1_700_000_000,
    livemode: false,
    pending_webhooks: 1,
    request: { id: 'req_test', idempotency_key: null },
    type: overrides.type ?? 'payment_intent.succeeded',
    data: {
      object: {
        id: 'pi_3Test',
        object: 'payment_intent',
        amount,
        amount_received: amount,
        currency: overrides.currency ?? 'jpy',
        status: 'succeeded',
        metadata: overrides.orderId === null ? {} : { order_id: overrides.orderId ?? '1' },
      },
    },
  };
}

/** Stripe-Signature for `payload` from Stripe's own library, at `timestamp` (Unix seconds). */
export function stripeSignature(
  payload: string,
  options: { secret?: string; timestamp?: number } = {},
): string {
  return stripeWebhooks.generateTestHeaderString({
    payload,
    secret: options.secret ?? TEST_STRIPE_SECRET,
    timestamp: options.timestamp,
  });
}

export function deliverStripe(
  app: FastifyInstance,
  payload: string,
  signature: string | undefined,
  headers: Record<string, string> = {},
): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: STRIPE_WEBHOOK_PATH,
    payload,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      ...(signature === undefined ? {} : { 'stripe-signature': signature }),
      ...headers,
    },
  });
}

/** A Standard Webhooks `payment.succeeded` payload in the shape docs/webhook-security.md gives. */
export function standardPaymentEvent(
  data: Partial<{
    order_id: unknown;
    amount: unknown;
    currency: unknown;
    payment_id: unknown;
  }> = {},
  type = 'payment.succeeded',
) {
  return {
    type,
    timestamp: '2023-11-14T22:13:20Z',
    data: { order_id: 1, amount: 5400, currency: 'jpy', ...data },
  };
}

export interface StandardHeaders extends Record<string, string> {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/** The three Standard Webhooks headers, signed by the spec's reference library. */
export function standardHeaders(
  payload: string,
  options: { id?: string; timestamp?: number; secret?: string } = {},
): StandardHeaders {
  const id = options.id ?? uniqueEventId('msg');
  const timestamp = options.timestamp ?? Math.floor(Date.now() / 1000);
  const signature = new Webhook(options.secret ?? TEST_STANDARD_SECRET).sign(
    id,
    new Date(timestamp * 1000),
    payload,
  );
  return {
    'webhook-id': id,
    'webhook-timestamp': String(timestamp),
    'webhook-signature': signature,
  };
}

export function deliverStandard(
  app: FastifyInstance,
  payload: string,
  headers: Record<string, string>,
): Promise<LightMyRequestResponse> {
  return app.inject({
    method: 'POST',
    url: STANDARD_WEBHOOK_PATH,
    payload,
    headers: { 'content-type': 'application/json', ...headers },
  });
}

/**
 * Whether a library's verifier accepts a delivery (returns rather than throws) at `nowMs`. The
 * Standard Webhooks and svix libraries read the real clock, so the clock is faked for the call.
 */
export function libraryAcceptsAt(nowMs: number, verify: () => unknown): boolean {
  const realNow = Date.now;
  Date.now = () => nowMs;
  try {
    verify();
    return true;
  } catch {
    return false;
  } finally {
    Date.now = realNow;
  }
}

/** Stripe's own verdict on a delivery (`constructEvent`) at `nowMs`, with one secret. */
export function stripeLibraryAccepts(
  payload: string,
  header: string,
  nowMs: number,
  secret = TEST_STRIPE_SECRET,
): boolean {
  return libraryAcceptsAt(nowMs, () =>
    stripeWebhooks.constructEvent(payload, header, secret, 300, undefined, nowMs),
  );
}

/** The reference library's verdict (`Webhook.verify`) at `nowMs`. */
export function standardLibraryAccepts(
  payload: string,
  headers: Record<string, string>,
  nowMs: number,
  secret = TEST_STANDARD_SECRET,
): boolean {
  return libraryAcceptsAt(nowMs, () => new Webhook(secret).verify(payload, headers));
}
