import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { signBody } from '../../src/http/signature';
import { PAYMENT_WEBHOOK_PATH } from '../../src/http/routes/payment-webhook';

export const TEST_WEBHOOK_SECRET = 'test-webhook-secret';

let counter = 0;
/** A fresh, unique provider event ID per call, so tests never collide on workflow IDs. */
export function uniqueEventId(prefix = 'evt'): string {
  counter += 1;
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${counter}`;
}

export function paymentEvent(
  overrides: Partial<{ id: string; event: string; order_id: number; amount: number }> = {},
) {
  return {
    id: uniqueEventId(),
    event: 'payment.succeeded',
    order_id: 1,
    amount: 5400,
    ...overrides,
  };
}

/** Delivers a webhook the way the provider does: raw bytes, signed with the shared secret. */
export function deliverWebhook(
  app: FastifyInstance,
  body: unknown,
  options: { signature?: string | null; secret?: string; headers?: Record<string, string> } = {},
): Promise<LightMyRequestResponse> {
  const raw = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const signature =
    options.signature === null
      ? undefined
      : (options.signature ?? signBody(raw, options.secret ?? TEST_WEBHOOK_SECRET));
  return app.inject({
    method: 'POST',
    url: PAYMENT_WEBHOOK_PATH,
    payload: raw,
    headers: {
      'content-type': 'application/json',
      ...(signature === undefined ? {} : { 'x-payment-signature': signature }),
      ...options.headers,
    },
  });
}
