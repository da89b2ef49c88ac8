import type { FastifyBaseLogger, FastifyInstance, FastifyRequest } from 'fastify';
import { EVENT_ID_PATTERN } from '../../shared/constants';
import {
  type PaymentStarter,
  type StartedPayment,
  TemporalUnavailableError,
} from '../../temporal/payment-starter';
import { HttpError } from '../errors';
import type { ProviderAuthResult, WebhookProvider } from '../providers/provider';
import type { FailureLimiter } from '../rate-limit';
import { withZodSchemas } from '../validation';

export { SIGNATURE_HEADER, TIMESTAMP_HEADER } from '../webhook-auth';
export { PAYMENT_WEBHOOK_PATH } from '../providers/original';

/** Every provider's endpoint is under it (and only it is routed from the internet). */
export const WEBHOOKS_PATH_PREFIX = '/api/v1/webhooks/';

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

type Verified = Extract<ProviderAuthResult, { ok: true }>;

export interface PaymentWebhookOptions {
  /** Whose deliveries this endpoint takes: its path, signature check and event mapping. */
  provider: WebhookProvider;
  /** Counts failed signature checks per client (one limiter for every provider's endpoint). */
  failures: FailureLimiter;
  bodyLimitBytes: number;
  payments: PaymentStarter;
  /**
   * The currency of the shop's order totals (SHOP_CURRENCY, lowercase). A payment the provider
   * reports in another currency is refused with 422 rather than compared with a total in
   * another unit. The contract's notifications carry none: their amounts are the shop's.
   */
  shopCurrency: string;
}

/**
 * POST to a provider's endpoint (the contract's /api/v1/webhooks/payment, Stripe's, a Standard
 * Webhooks sender's). Answers 200 only once the event is durably queued in Temporal (a workflow
 * started, or found already started with the same body); 409 when the event ID was already
 * received with another order or amount; 422 for a payment in another currency than the shop's;
 * 503 when Temporal can't be reached, so the provider delivers again and nothing accepted is
 * ever lost. Register it once per provider.
 */
export async function paymentWebhookRoutes(
  fastify: FastifyInstance,
  options: PaymentWebhookOptions,
) {
  const app = withZodSchemas(fastify);
  // The signature covers the raw bytes, so this route takes the body unparsed, whatever its
  // content type claims, and parses it only after the signature holds.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  const { provider } = options;
  // What the signature check verified (which secret; the event ID of header-signed schemes),
  // for the handler.
  const verified = new WeakMap<FastifyRequest, Verified>();

  app.post(
    provider.path,
    {
      bodyLimit: options.bodyLimitBytes,
      schema: { body: provider.notification },
      // A client that keeps failing the signature check is refused before its body is buffered
      // or any HMAC computed. Only failures count, so the provider's bursts are never refused.
      onRequest: async (request) => {
        const retryAfter = options.failures.retryAfterSeconds(request.ip);
        if (retryAfter > 0) {
          throw new HttpError(429, 'too many requests with a failed signature check', {
            'retry-after': String(retryAfter),
          });
        }
      },
      // Fastify answers 415 to a Content-Type it cannot parse (";", "a/b/c") before any parser
      // runs. The contract takes the bytes whatever type they claim, so the claim is set aside.
      preParsing: async (request, _reply, payload) => {
        request.headers['content-type'] = 'application/octet-stream';
        return payload;
      },
      // The signature is checked on the raw bytes, before anything reads them; only then are
      // they decoded and parsed, and the schema checks what they say.
      preValidation: async (request) => {
        const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
        const auth = provider.verify(rawBody, request.raw.rawHeaders);
        if (!auth.ok) {
          if (options.failures.recordFailure(request.ip)) {
            request.log.warn(
              { clientIp: request.ip },
              'webhook: client used up its budget of failed signature checks; refusing it for now',
            );
          }
          throw new HttpError(401, auth.reason);
        }
        verified.set(request, auth);
        // Unchecked here: the route's schema checks it next, before the handler sees it.
        request.body = parseJson(rawBody) as typeof request.body;
      },
    },
    async (request, reply) => {
      const auth = verified.get(request);
      const matchedSecret = auth?.matchedSecret;
      const notification = request.body;
      if (!notification.handled) {
        request.log.info(
          {
            provider: provider.name,
            event: notification.event,
            note: notification.note,
            matchedSecret,
          },
          'webhook ignored: event type not handled',
        );
        return reply.code(200).send({ status: 'ignored' });
      }
      const providerEventId = notification.eventId ?? auth?.eventId ?? '';
      if (!EVENT_ID_PATTERN.test(providerEventId)) {
        throw new HttpError(
          400,
          'the event ID must be 1-200 characters of letters, digits and _ . : -',
        );
      }
      const eventId = provider.qualifyEventId(providerEventId);
      const { orderId, amount, currency } = notification;
      if (currency !== undefined && currency !== options.shopCurrency) {
        // Not a 200: an amount in another unit must not pay (or be compared with) the order's
        // total. Providers retry a refusal for days, so if SHOP_CURRENCY is what is wrong, fixing
        // it lets the retries through; otherwise the payment is on the provider's dashboard.
        request.log.error(
          {
            provider: provider.name,
            eventId,
            orderId,
            amount,
            currency,
            shopCurrency: options.shopCurrency,
          },
          "webhook refused: payment in another currency than the shop's",
        );
        throw new HttpError(
          422,
          `the payment is in ${currency.toUpperCase()}, but this shop's orders are in ${options.shopCurrency.toUpperCase()} (SHOP_CURRENCY); it is not recorded`,
        );
      }

      let started: StartedPayment;
      try {
        started = await options.payments.start({ eventId, orderId, amount });
      } catch (err) {
        if (err instanceof TemporalUnavailableError && err.configurationProblem) {
          // Still 503 (nothing accepted is lost), but no outage will end by itself: say so loudly.
          request.log.error(
            { eventId, orderId, reason: err.configurationProblem, err: err.cause },
            'webhook deferred: Temporal refused the start: configuration error, not an outage',
          );
        } else if (err instanceof TemporalUnavailableError) {
          request.log.warn(
            { eventId, orderId, err: err.cause },
            'webhook deferred: Temporal unavailable',
          );
        }
        if (err instanceof TemporalUnavailableError) {
          throw new HttpError(503, 'temporarily unavailable, please retry', { 'retry-after': '5' });
        }
        throw err;
      }

      const { workflowId } = started;
      if (started.duplicate) {
        checkDuplicate(request.log, started, { eventId, orderId, amount, matchedSecret });
      } else {
        request.log.info(
          { eventId, orderId, workflowId, duplicate: false, matchedSecret },
          'webhook accepted: payment workflow started',
        );
      }
      return reply.code(200).header('x-workflow-id', workflowId).send({ status: 'accepted' });
    },
  );
}

/**
 * A duplicate delivery is the provider's retry, answered 200 like the first, only when its
 * body is the first one's. The same event ID with another order or amount is a provider bug or
 * a leaked secret: the first body stands (its workflow is untouched), and this one is refused
 * with 409 so that it shows on the provider's dashboard, where a 200 would have buried it.
 * Throws the 409; logs the outcome either way.
 */
function checkDuplicate(
  log: FastifyBaseLogger,
  started: Extract<StartedPayment, { duplicate: true }>,
  delivery: {
    eventId: string;
    orderId: number;
    amount: number;
    matchedSecret: string | undefined;
  },
): void {
  const { workflowId, existing } = started;
  const { eventId, orderId, amount, matchedSecret } = delivery;
  const fields = { eventId, orderId, workflowId, duplicate: true, matchedSecret };
  if (!existing.known) {
    // The event is queued (its run exists or existed), so this stays the 200 of a retry; only
    // the check for a different body could not be made, and the log says why.
    log.warn(
      { ...fields, amount, reason: existing.reason, err: existing.cause },
      'webhook accepted: duplicate delivery, not compared with the first',
    );
    return;
  }

  const differs: string[] = [];
  // A field the run does not record (runs started before the memo carried it) cannot differ.
  if (existing.orderId !== undefined && existing.orderId !== orderId) differs.push('order_id');
  if (existing.amount !== undefined && existing.amount !== amount) differs.push('amount');
  if (differs.length > 0) {
    log.warn(
      {
        eventId,
        workflowId,
        received: { orderId, amount },
        recorded: { orderId: existing.orderId, amount: existing.amount },
        matchedSecret,
      },
      'webhook conflict: event ID already received with a different body',
    );
    throw new HttpError(
      409,
      `event ${eventId} was already received with a different ${differs.join(' and ')}; ` +
        'this delivery is not processed',
      { 'x-workflow-id': workflowId },
    );
  }

  const unrecorded = [
    existing.orderId === undefined ? 'order ID' : undefined,
    existing.amount === undefined ? 'amount' : undefined,
  ].filter((f) => f !== undefined);
  log.info(
    unrecorded.length === 0
      ? fields
      : { ...fields, notCompared: `the first run's memo has no ${unrecorded.join(' or ')}` },
    'webhook accepted: duplicate delivery',
  );
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
