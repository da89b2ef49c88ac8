import type { FastifyBaseLogger, FastifyInstance } from 'fastify';
import type { UnmatchedInbox } from '../../db';
import {
  type PaymentStarter,
  type StartedPayment,
  TemporalUnavailableError,
} from '../../temporal/payment-starter';
import type { ThinEventStarter } from '../../temporal/thin-event-starter';
import { HttpError } from '../errors';
import { deliver, type DeliveryOutcome, toDelivery } from '../providers/delivery';
import type { WebhookProvider } from '../providers/provider';
import type { FailureLimiter } from '../rate-limit';

export { SIGNATURE_HEADER, TIMESTAMP_HEADER } from '../webhook-auth';
export { PAYMENT_WEBHOOK_PATH } from '../providers/original';

/** Every provider's endpoint is under it (and only it is routed from the internet). */
export const WEBHOOKS_PATH_PREFIX = '/api/v1/webhooks/';

export interface PaymentWebhookOptions {
  /** Whose deliveries this endpoint takes: its path, signature check and event mapping. */
  provider: WebhookProvider;
  /** Counts failed signature checks per client (one limiter for every provider's endpoint). */
  failures: FailureLimiter;
  bodyLimitBytes: number;
  payments: PaymentStarter;
  /**
   * The unmatched inbox: signed deliveries answered 2xx that no workflow can act on as sent, and
   * the payments whose workflow found no order (a redelivery of one is counted there).
   */
  unmatched: UnmatchedInbox;
  /** Starts the fetch of a Stripe thin event's object; unset (no STRIPE_API_KEY): unmatched. */
  thinEvents?: ThinEventStarter;
  /**
   * The currency of the shop's order totals (SHOP_CURRENCY, lowercase). A payment the provider
   * reports in another currency is kept as unmatched rather than compared with a total in
   * another unit. The contract's notifications carry none: their amounts are the shop's.
   */
  shopCurrency: string;
}

/**
 * POST to a provider's endpoint (the contract's /api/v1/webhooks/payment, Stripe's, a Standard
 * Webhooks sender's). Answers 200 only once the event is durably queued in Temporal (a workflow
 * started, or found already started with the same body); 409 when the event ID was already
 * received with another order or amount; 200 "unmatched" for a signed event no workflow can act on;
 * 503 when Temporal can't be reached, so the provider delivers again and nothing accepted is
 * ever lost. Register it once per provider.
 */
export async function paymentWebhookRoutes(
  fastify: FastifyInstance,
  options: PaymentWebhookOptions,
) {
  // The signature covers the raw bytes, so this route takes the body unparsed, whatever its
  // content type claims; the provider parses it only after the signature holds.
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) =>
    done(null, body),
  );
  const { provider } = options;

  fastify.post(
    provider.path,
    {
      bodyLimit: options.bodyLimitBytes,
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
    },
    async (request, reply) => {
      const rawBody = Buffer.isBuffer(request.body) ? request.body : Buffer.alloc(0);
      const receipt = provider.receive(rawBody, request.raw.rawHeaders);
      if (!receipt.ok) {
        if (receipt.status === 401 && options.failures.recordFailure(request.ip)) {
          request.log.warn(
            { clientIp: request.ip },
            'webhook: client used up its budget of failed signature checks; refusing it for now',
          );
        }
        throw new HttpError(receipt.status, receipt.reason);
      }
      const { event, matchedSecret } = receipt;
      const log = { provider: provider.name, event: event.type, matchedSecret };
      if (event.kind === 'ignored') {
        request.log.info({ ...log, note: event.note }, 'webhook ignored: event type not handled');
        return reply.code(200).send({ status: 'ignored' });
      }
      const delivery = toDelivery(event, {
        provider: provider.name,
        shopCurrency: options.shopCurrency,
      });
      let outcome: DeliveryOutcome;
      try {
        outcome = await deliver(delivery, options);
      } catch (err) {
        throw deferred(request.log, err, { ...log, eventId: event.eventId });
      }

      if (outcome.kind === 'unmatched') {
        request.log.warn(
          {
            ...log,
            eventId: event.eventId,
            reason: outcome.reason,
            note: outcome.note,
            unmatchedId: outcome.id,
            duplicate: !outcome.created,
          },
          'webhook kept as unmatched: signed, but not ours to act on as sent (npm run ops -- unmatched list)',
        );
        return reply.code(200).send({ status: 'unmatched' });
      }

      const { started } = outcome;
      const { workflowId } = started;
      if (delivery.kind === 'payment' && 'existing' in started) {
        const { eventId, orderId, amount } = delivery.input;
        checkDuplicate(request.log, started, { eventId, orderId, amount, matchedSecret });
        const kept = await keptAsUnknownOrder(request.log, options.unmatched, eventId);
        if (kept) {
          request.log.warn(
            { eventId, orderId, workflowId, unmatchedId: kept.id, duplicate: true, matchedSecret },
            'webhook: duplicate delivery of a payment kept as unmatched (unknown order): counted',
          );
          return reply.code(200).header('x-workflow-id', workflowId).send({ status: 'unmatched' });
        }
      } else {
        // Keyed by its event ID, a second start is the provider's retry; a payment's was compared above.
        const about =
          delivery.kind === 'payment'
            ? { orderId: delivery.input.orderId }
            : 'event' in delivery
              ? { paymentRef: delivery.event.paymentRef }
              : {};
        request.log.info(
          { ...log, eventId: event.eventId, ...about, workflowId, duplicate: started.duplicate },
          `webhook accepted: ${delivery.kind} workflow ${started.duplicate ? 'already started' : 'started'}`,
        );
      }
      return reply.code(200).header('x-workflow-id', workflowId).send({ status: 'accepted' });
    },
  );
}

/** A start Temporal did not take: 503, so the provider delivers again and nothing is lost. */
function deferred(log: FastifyBaseLogger, err: unknown, fields: Record<string, unknown>): unknown {
  if (!(err instanceof TemporalUnavailableError)) return err;
  if (err.configurationProblem) {
    // Still 503 (nothing accepted is lost), but no outage will end by itself: say so loudly.
    log.error(
      { ...fields, reason: err.configurationProblem, err: err.cause },
      'webhook deferred: Temporal refused the start: configuration error, not an outage',
    );
  } else {
    log.warn({ ...fields, err: err.cause }, 'webhook deferred: Temporal unavailable');
  }
  return new HttpError(503, 'temporarily unavailable, please retry', { 'retry-after': '5' });
}

/**
 * Counts a duplicate delivery of a payment whose workflow kept it as unmatched (its order does
 * not exist). Best effort: the event is queued either way, and a database that cannot count it
 * now must not turn the provider's retry into a 5xx. Undefined: not kept (yet), or not known.
 */
async function keptAsUnknownOrder(
  log: FastifyBaseLogger,
  unmatched: UnmatchedInbox,
  eventId: string,
): Promise<{ id: number } | undefined> {
  try {
    return await unmatched.countRedelivery(eventId, 'unknown_order');
  } catch (err) {
    log.warn(
      { eventId, err },
      'webhook: could not count a duplicate delivery in the unmatched inbox',
    );
    return undefined;
  }
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
