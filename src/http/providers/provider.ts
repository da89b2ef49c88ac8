import { timingSafeEqual } from 'node:crypto';
import type { z } from 'zod';

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

export type ProviderNotification =
  /** An event type we do not act on: acknowledged with 200 "ignored". `note` says why, for the log. */
  | { handled: false; event: string; note?: string }
  | {
      handled: true;
      event: string;
      /** The provider's event ID, when the body carries it (else the verifier's). */
      eventId?: string;
      orderId: number;
      /** In the currency's smallest unit, as the provider reports it. */
      amount: number;
      /** ISO 4217, lowercase; absent for the original contract, whose amounts are the shop's. */
      currency?: string;
    };

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
  return { name, path, verify, notification, qualifyEventId: (id) => providerEventId(name, id) };
}
