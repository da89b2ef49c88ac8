import { setTimeout as delay } from 'node:timers/promises';
import { signBody } from '../../src/http/signature';
import { PAYMENT_WEBHOOK_PATH } from '../../src/http/routes/payment-webhook';
import { PAYMENT_SUCCEEDED_EVENT } from '../../src/shared/constants';
import type { Random } from './random';

/**
 * Plays the payment provider over real HTTP: every event is delivered two or three times (some
 * copies at the same instant, others seconds apart), and each delivery is retried, as providers
 * do, until it gets a 200: after a 503 (Temporal unreachable) or when the connection fails.
 */

export interface PaymentEvent {
  id: string;
  orderId: number;
  amount: number;
}

export interface DeliveryStats {
  /** Deliveries the provider decided to make (copies of events), each retried until 200. */
  deliveries: number;
  /** Copies sent at the same instant as another copy of the same event. */
  concurrentCopies: number;
  /** HTTP requests, retries included. */
  requests: number;
  accepted: number;
  status503: number;
  connectionErrors: number;
  /** Answers other than 200 and 503: the webhook misbehaved. */
  unexpected: Array<{ eventId: string; status: number; body: string }>;
  /** Deliveries still without a 200 when the run stopped delivering. */
  abandoned: number;
}

export function emptyDeliveryStats(): DeliveryStats {
  return {
    deliveries: 0,
    concurrentCopies: 0,
    requests: 0,
    accepted: 0,
    status503: 0,
    connectionErrors: 0,
    unexpected: [],
    abandoned: 0,
  };
}

export interface ProviderOptions {
  baseUrl: string;
  secret: string;
  random: Random;
  stats: DeliveryStats;
  /** Events whose delivery got at least one 200 ("accepted": durably queued). */
  accepted: Set<string>;
  /** Stops retrying (the run's delivery deadline). */
  signal: AbortSignal;
}

// Providers back off between retries; a few seconds at most keeps the run short.
const MAX_RETRY_WAIT_MS = 2_000;
const REQUEST_TIMEOUT_MS = 15_000;
// Copies after the first arrive within this long (a provider's redelivery of an unacknowledged
// or doubly queued notification).
const REDELIVERY_SPREAD_MS = 4_000;

/** Delivers one event 2–3 times; resolves when every copy got its 200 (or the run gave up). */
export async function deliverEvent(event: PaymentEvent, options: ProviderOptions): Promise<void> {
  const { random, stats } = options;
  const copies = random.int(2, 3);
  const together = random.chance(0.4);
  const offsets = Array.from({ length: copies }, (_, i) =>
    i === 0 || (i === 1 && together) ? 0 : random.int(50, REDELIVERY_SPREAD_MS),
  );
  stats.deliveries += copies;
  if (together) stats.concurrentCopies += 2;
  const raw = JSON.stringify({
    id: event.id,
    event: PAYMENT_SUCCEEDED_EVENT,
    order_id: event.orderId,
    amount: event.amount,
  });
  await Promise.all(
    offsets.map(async (offset) => {
      if (offset > 0) await delay(offset);
      await deliverUntilAccepted(event.id, raw, options);
    }),
  );
}

async function deliverUntilAccepted(eventId: string, raw: string, options: ProviderOptions) {
  const { stats, random } = options;
  const url = new URL(PAYMENT_WEBHOOK_PATH, options.baseUrl);
  for (let attempt = 1; ; attempt++) {
    if (options.signal.aborted) {
      stats.abandoned += 1;
      return;
    }
    stats.requests += 1;
    let waitMs: number;
    try {
      const response = await fetch(url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-payment-signature': signBody(raw, options.secret),
        },
        body: raw,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      const body = await response.text();
      if (response.status === 200) {
        stats.accepted += 1;
        options.accepted.add(eventId);
        return;
      }
      if (response.status !== 503) {
        stats.unexpected.push({ eventId, status: response.status, body: body.slice(0, 200) });
        return;
      }
      stats.status503 += 1;
      const retryAfterS = Number(response.headers.get('retry-after'));
      waitMs = Number.isFinite(retryAfterS) && retryAfterS > 0 ? retryAfterS * 1000 : 1_000;
    } catch {
      stats.connectionErrors += 1;
      waitMs = 250 * 2 ** Math.min(attempt - 1, 3);
    }
    // Jitter, so the retries of many deliveries do not come back in one wave.
    await delay(Math.min(waitMs, MAX_RETRY_WAIT_MS) * (0.5 + random.next() / 2));
  }
}
