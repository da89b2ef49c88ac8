import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { EVENT_ID_PATTERN, PAYMENT_SUCCEEDED_EVENT } from '../../shared/constants';
import { type PaymentStarter, TemporalUnavailableError } from '../../temporal/payment-starter';
import { HttpError } from '../errors';
import { formatIssues } from '../validation';
import { isValidSignature } from '../signature';

export const PAYMENT_WEBHOOK_PATH = '/api/v1/webhooks/payment';
export const SIGNATURE_HEADER = 'x-payment-signature';

/** Every notification carries an event type; only some are ours to act on. */
const envelopeSchema = z.object({ event: z.string().min(1).max(100) });

const paymentSucceededSchema = z.object({
  id: z
    .string()
    .regex(EVENT_ID_PATTERN, 'id must be 1-200 characters of letters, digits and _ . : -'),
  event: z.literal(PAYMENT_SUCCEEDED_EVENT),
  order_id: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
  amount: z.number().int().positive().max(Number.MAX_SAFE_INTEGER),
});

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

export interface PaymentWebhookOptions {
  secret: string;
  bodyLimitBytes: number;
  payments: PaymentStarter;
}

/**
 * POST /api/v1/webhooks/payment. Answers 200 only once the event is durably queued in Temporal
 * (a workflow started, or found already started); 503 when Temporal can't be reached, so the
 * provider delivers again and nothing accepted is ever lost.
 */
export async function paymentWebhookRoutes(app: FastifyInstance, options: PaymentWebhookOptions) {
  // The signature covers the raw bytes, so this route takes the body unparsed, whatever its
  // content type claims, and parses it only after the signature holds.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));

  app.post(PAYMENT_WEBHOOK_PATH, { bodyLimit: options.bodyLimitBytes }, async (request, reply) => {
    const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);

    const signature = request.headers[SIGNATURE_HEADER];
    if (typeof signature !== 'string' || signature.length === 0) {
      throw new HttpError(401, 'missing X-Payment-Signature header');
    }
    if (!isValidSignature(rawBody, signature.trim(), options.secret)) {
      throw new HttpError(401, 'invalid signature');
    }

    const payload = parseJson(rawBody);
    const envelope = envelopeSchema.safeParse(payload);
    if (!envelope.success) throw new HttpError(400, formatIssues(envelope.error));

    if (envelope.data.event !== PAYMENT_SUCCEEDED_EVENT) {
      request.log.info({ event: envelope.data.event }, 'webhook ignored: event type not handled');
      return reply.code(200).send({ status: 'ignored' });
    }

    const parsed = paymentSucceededSchema.safeParse(payload);
    if (!parsed.success) throw new HttpError(400, formatIssues(parsed.error));
    const { id: eventId, order_id: orderId, amount } = parsed.data;

    try {
      const started = await options.payments.start({ eventId, orderId, amount });
      request.log.info(
        { eventId, orderId, workflowId: started.workflowId, duplicate: started.duplicate },
        started.duplicate
          ? 'webhook accepted: duplicate delivery'
          : 'webhook accepted: payment workflow started',
      );
      return reply
        .code(200)
        .header('x-workflow-id', started.workflowId)
        .send({ status: 'accepted' });
    } catch (err) {
      if (err instanceof TemporalUnavailableError) {
        request.log.warn(
          { eventId, orderId, err: err.cause },
          'webhook deferred: Temporal unavailable',
        );
        throw new HttpError(503, 'temporarily unavailable, please retry', { 'retry-after': '5' });
      }
      throw err;
    }
  });
}

function parseJson(raw: Buffer): unknown {
  let text: string;
  try {
    text = strictUtf8.decode(raw);
  } catch {
    throw new HttpError(400, 'body is not valid UTF-8');
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new HttpError(400, 'body is not valid JSON');
  }
}
