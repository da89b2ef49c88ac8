import { timingSafeEqual } from 'node:crypto';
import type { z } from 'zod';
import type { UnmatchedReason } from '../../db';
import type { DisputeEvent, RefundEvent } from '../../shared/payment-events';
import type { StripeThinNotification } from '../../shared/thin-event';

/**
 * A payment provider as the webhook route sees it: how its deliveries are authenticated, and
 * how its events read as our payments. One route serves every provider (routes/payment-webhook.ts);
 * a provider is this object, built from configuration, not a copy of the route.
 */
export interface WebhookProvider {
  /** Names the provider in log lines and in its endpoint's path. */
  readonly name: string;
  readonly path: string;
  /** Checks the delivery's signature over the raw bytes, before anything parses them. */
  readonly verify: ProviderVerifier;
  /** Reads the parsed body (once the signature holds) as a notification; its issues are 400s. */
  readonly notification: z.ZodType<ProviderNotification>;
  /**
   * The event ID as the payment workflow and the payments table know it: the dedup key. Each
   * provider's events live in their own part of that key space, so an `evt_1` of one provider
   * is never taken for another's.
   */
  qualifyEventId(eventId: string): string;
  /** A payment reference (`pi_…`, a `payment_id`) in the same key space, for the payment row. */
  qualifyPaymentRef(ref: string): string;
}

export type ProviderAuthResult =
  | {
      ok: true;
      /** Which configured secret or key verified it, for the log (never the secret itself). */
      matchedSecret: string;
      /** The event ID, when the scheme signs it in a header rather than the body carrying it. */
      eventId?: string;
    }
  /** `reason` is safe for the client: it never contains a secret, a digest or the body. */
  | { ok: false; reason: string };

/** `rawHeaders`: the request's header lines as received (`request.raw.rawHeaders`). */
export type ProviderVerifier = (
  rawBody: Buffer,
  rawHeaders: readonly string[],
) => ProviderAuthResult;

/**
 * A provider's event as this shop reads it. Amounts are in the currency's smallest unit;
 * currencies are lowercase ISO 4217 (absent for the contract's scheme, whose amounts are the
 * shop's). `eventId` is the provider's own, unqualified; absent when the scheme signs it in a
 * header instead (the verifier's). Payment references are the provider's own too (`pi_…`, a
 * `payment_id`): the route qualifies them like event IDs.
 */
export type ProviderNotification =
  /** A type we do not act on: acknowledged with 200 "ignored". `note` says why, for the log. */
  | { kind: 'ignored'; event: string; note?: string }
  | {
      kind: 'payment';
      event: string;
      eventId?: string;
      /** The order ID; text when the provider's reference is not one of ours ("ORD-12"). */
      orderRef: number | string;
      amount: number;
      currency?: string;
      /** Absent: the event's own ID stands for the payment (the contract's, Standard's default). */
      paymentRef?: string;
    }
  | {
      kind: 'refund';
      event: string;
      eventId?: string;
      paymentRef: string;
      refund: Omit<RefundEvent, 'eventId' | 'paymentRef'>;
    }
  | {
      kind: 'dispute';
      event: string;
      eventId?: string;
      paymentRef: string;
      dispute: Omit<DisputeEvent, 'eventId' | 'paymentRef'>;
    }
  /**
   * Signed and well-formed, but not ours to act on as sent (another Stripe account or mode, an
   * amount no order can have): answered 2xx and kept in the unmatched inbox.
   */
  | {
      kind: 'unmatched';
      event: string;
      eventId?: string;
      reason: UnmatchedReason;
      /** For the operator: what did not match. */
      note: string;
      /** What the provider sent about it, kept with the entry. */
      object: unknown;
    }
  /** A Stripe thin event: only a notification; its object is fetched from Stripe's API. */
  | { kind: 'thin'; event: string; eventId: string; notification: StripeThinNotification };

/**
 * How a secret that verified a delivery is named in the log: the first configured is the
 * current one, the next ones are being rotated out. Shows a rotation's progress.
 */
export function secretLabel(index: number): string {
  return index === 0 ? 'current' : `previous-${index}`;
}

/**
 * Index of the first expected value that equals one of `given`, or -1. Every pair is compared,
 * in constant time and with no early exit, so the response time shows neither how close a
 * guess was nor which key matched. Only lengths are compared openly: the formats make them public.
 */
export function firstMatchingKey(expected: readonly Buffer[], given: readonly Buffer[]): number {
  let match = -1;
  expected.forEach((value, index) => {
    let equal = false;
    for (const candidate of given) {
      if (candidate.length === value.length && timingSafeEqual(candidate, value)) equal = true;
    }
    if (equal && match === -1) match = index;
  });
  return match;
}

/**
 * Unix seconds, as the schemes send them: digits only (no sign, fraction or padding spaces),
 * ten until the year 2286, twelve at most so no absurd value is ever compared.
 */
export const UNIX_SECONDS = /^[0-9]{1,12}$/;

/**
 * The event ID of a named provider's event as the workflow ID (`payment-stripe~evt_1`) and
 * `payments.provider_event_id` hold it. `~` is outside the original contract's event-ID alphabet
 * (letters, digits, `_ . : -`), so no event of the original endpoint, whose IDs stay bare, can
 * ever take the key of another provider's event; and it needs no escaping in a URL or a shell.
 */
export function providerEventId(provider: string, eventId: string): string {
  return `${provider}~${eventId}`;
}

/** A provider other than the contract's: its endpoint and its events' keys carry its name. */
export function namedProvider(
  name: string,
  path: string,
  verify: ProviderVerifier,
  notification: WebhookProvider['notification'],
): WebhookProvider {
  const qualify = (id: string) => providerEventId(name, id);
  return { name, path, verify, notification, qualifyEventId: qualify, qualifyPaymentRef: qualify };
}
