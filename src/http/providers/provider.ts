import { timingSafeEqual } from 'node:crypto';
import type { z } from 'zod';
import type { UnmatchedReason } from '../../db';
import type { DisputeEvent, RefundEvent } from '../../shared/payment-events';
import type { StripeThinNotification } from '../../shared/thin-event';
import { formatIssues } from '../validation';

/**
 * A payment provider as the webhook route sees it: one call that takes the delivery's raw bytes
 * and answers with what it is. One route serves every provider (routes/payment-webhook.ts); a
 * provider is this object, built from configuration by `webhookProvider`, not a copy of the route.
 */
export interface WebhookProvider {
  /** Names the provider in log lines and in its endpoint's path. */
  readonly name: string;
  readonly path: string;
  /** The signature checked over the raw bytes, then the body read and its IDs made keys. */
  receive(rawBody: Buffer, rawHeaders: readonly string[]): Receipt;
}

/** `reason` is safe for the client: it never contains a secret, a digest or the body. */
export type Receipt =
  | { ok: false; status: 400 | 401; reason: string }
  /** `matchedSecret`: which configured secret or key verified it, for the log. */
  | { ok: true; matchedSecret: string; event: ProviderEvent };

export type ProviderAuthResult =
  /** `id`: the event's ID, when the scheme signs it in a header rather than the body. */
  { ok: true; matchedSecret: string; id?: string } | { ok: false; reason: string };

/** `rawHeaders`: the request's header lines as received (`request.raw.rawHeaders`). */
export type ProviderVerifier = (
  rawBody: Buffer,
  rawHeaders: readonly string[],
) => ProviderAuthResult;

/**
 * A provider's event as its schema reads it, in the provider's own terms. Amounts are in the
 * currency's smallest unit; currencies are lowercase ISO 4217 (absent for the contract's scheme,
 * whose amounts are the shop's). `id` and payment references are the provider's own, as sent
 * (`evt_1`, `pi_…`); `id` is absent when the scheme signs it in a header instead.
 */
export type ProviderNotification =
  /** A type we do not act on: acknowledged with 200 "ignored". `note` says why, for the log. */
  | { kind: 'ignored'; type: string; note?: string }
  | {
      kind: 'payment';
      type: string;
      id?: string;
      /** The order ID; text when the provider's reference is not one of ours ("ORD-12"). */
      orderRef: number | string;
      amount: number;
      currency?: string;
      /** Absent: the event's own ID stands for the payment (the contract's, Standard's default). */
      paymentRef?: string;
    }
  | {
      kind: 'refund';
      type: string;
      id?: string;
      paymentRef: string;
      refund: Omit<RefundEvent, 'eventId' | 'paymentRef'>;
    }
  | {
      kind: 'dispute';
      type: string;
      id?: string;
      paymentRef: string;
      dispute: Omit<DisputeEvent, 'eventId' | 'paymentRef'>;
    }
  /**
   * Signed and well-formed, but not ours to act on as sent (another Stripe account or mode, an
   * amount no order can have): answered 2xx and kept in the unmatched inbox.
   */
  | {
      kind: 'unmatched';
      type: string;
      id?: string;
      reason: UnmatchedReason;
      /** For the operator: what did not match. */
      note: string;
      /** What the provider sent about it, kept with the entry. */
      object: unknown;
    }
  /** A Stripe thin event: only a notification; its object is fetched from Stripe's API. */
  | { kind: 'thin'; type: string; id: string; notification: StripeThinNotification };

/**
 * The event as this shop keys it: `eventId` and payment references qualified by provider
 * (`stripe~evt_1`), the names the workflows, the tables and the unmatched inbox use. `sentId` is
 * the provider's own ID as sent, kept only for the operator's view of an unmatched delivery.
 */
export type ProviderEvent =
  | Extract<ProviderNotification, { kind: 'ignored' }>
  | {
      kind: 'payment';
      type: string;
      eventId: string;
      sentId: string;
      orderRef: number | string;
      amount: number;
      currency?: string;
      paymentRef: string;
    }
  | { kind: 'refund'; type: string; eventId: string; refund: RefundEvent }
  | { kind: 'dispute'; type: string; eventId: string; dispute: DisputeEvent }
  | {
      kind: 'unmatched';
      type: string;
      eventId: string;
      sentId: string;
      reason: UnmatchedReason;
      note: string;
      object: unknown;
    }
  | { kind: 'thin'; type: string; eventId: string; notification: StripeThinNotification };

/**
 * How a provider's own IDs become this shop's keys. Each provider's events live in their own
 * part of the key space, so an `evt_1` of one provider is never taken for another's.
 */
export interface EventKeys {
  eventId(sentId: string): string;
  paymentRef(sentRef: string): string;
}

/**
 * The event ID of a named provider's event as the workflow ID (`payment-stripe~evt_1`) and
 * `payments.provider_event_id` hold it. `~` is outside the original contract's event-ID alphabet
 * (letters, digits, `_ . : -`), so no event of the original endpoint, whose IDs stay bare, can
 * ever take the key of another provider's event; and it needs no escaping in a URL or a shell.
 */
export function providerEventId(provider: string, sentId: string): string {
  return `${provider}~${sentId}`;
}

/** A provider other than the contract's: its events' keys and references carry its name. */
export function namedKeys(provider: string): EventKeys {
  const qualify = (id: string) => providerEventId(provider, id);
  return { eventId: qualify, paymentRef: qualify };
}

/** A provider from its parts: where it listens, how it verifies, reads and keys its events. */
export function webhookProvider(parts: {
  name: string;
  path: string;
  verify: ProviderVerifier;
  notification: z.ZodType<ProviderNotification>;
  keys: EventKeys;
}): WebhookProvider {
  const { name, path, verify, notification, keys } = parts;
  return {
    name,
    path,
    receive(rawBody, rawHeaders) {
      const auth = verify(rawBody, rawHeaders);
      if (!auth.ok) return { ok: false, status: 401, reason: auth.reason };
      // Only now, with the signature holding, are the bytes decoded and read.
      const body = parseJson(rawBody);
      if (!body.ok) return { ok: false, status: 400, reason: body.reason };
      const read = notification.safeParse(body.value);
      if (!read.success) return { ok: false, status: 400, reason: formatIssues(read.error) };
      const { matchedSecret } = auth;
      if (read.data.kind === 'ignored') return { ok: true, matchedSecret, event: read.data };
      // Every scheme names its event: in the body, or in a header its signature covers.
      const sentId = read.data.id ?? auth.id;
      if (sentId === undefined) return { ok: false, status: 400, reason: 'no event ID' };
      return { ok: true, matchedSecret, event: keyed(read.data, sentId, keys) };
    },
  };
}

/** The notification under this shop's keys; `sentId` is its ID, from the body or the header. */
export function keyed(
  notification: Exclude<ProviderNotification, { kind: 'ignored' }>,
  sentId: string,
  keys: EventKeys,
): Exclude<ProviderEvent, { kind: 'ignored' }> {
  const { type } = notification;
  const eventId = keys.eventId(sentId);
  switch (notification.kind) {
    case 'thin':
      return { kind: 'thin', type, eventId, notification: notification.notification };
    case 'refund': {
      const paymentRef = keys.paymentRef(notification.paymentRef);
      const refund = { ...notification.refund, eventId, paymentRef };
      return { kind: 'refund', type, eventId, refund };
    }
    case 'dispute': {
      const paymentRef = keys.paymentRef(notification.paymentRef);
      const dispute = { ...notification.dispute, eventId, paymentRef };
      return { kind: 'dispute', type, eventId, dispute };
    }
    case 'unmatched': {
      const { reason, note, object } = notification;
      return { kind: 'unmatched', type, eventId, sentId, reason, note, object };
    }
    case 'payment': {
      const { orderRef, amount, currency } = notification;
      // The event's own ID, as sent, names the payment when the provider gives no reference.
      const paymentRef = keys.paymentRef(notification.paymentRef ?? sentId);
      return { kind: 'payment', type, eventId, sentId, orderRef, amount, currency, paymentRef };
    }
  }
}

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

function parseJson(raw: Buffer): { ok: true; value: unknown } | { ok: false; reason: string } {
  let text: string;
  try {
    text = strictUtf8.decode(raw);
  } catch {
    return { ok: false, reason: 'body is not valid UTF-8' };
  }
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, reason: 'body is not valid JSON' };
  }
}

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
