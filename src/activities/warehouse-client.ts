import { ApplicationFailure } from '@temporalio/common';
import { FailureType, type RateLimitDetails } from '../shared/errors';
import { parseRetryAfterMs } from './retry-after';

/** What the warehouse answered for one shipment request. */
export interface ShipmentReceipt {
  shipmentId: string;
  /** True when the warehouse had already seen this idempotency key (a retry of an earlier call). */
  replayed: boolean;
}

export interface WarehouseClient {
  requestShipment(input: {
    orderId: number;
    idempotencyKey: string;
    signal?: AbortSignal;
  }): Promise<ShipmentReceipt>;
}

/**
 * HTTP client for the warehouse partner API. It turns every answer into either a receipt or an
 * ApplicationFailure whose type says how to retry: rejected requests are non-retryable, 429
 * carries the partner's Retry-After in its details, everything else is a retryable outage.
 */
export function createWarehouseClient(options: {
  baseUrl: string;
  timeoutMs: number;
}): WarehouseClient {
  const url = new URL('/v1/shipments', options.baseUrl).toString();
  return {
    async requestShipment({ orderId, idempotencyKey, signal }) {
      // Abandon a hung call after timeoutMs, or earlier if the activity is cancelled.
      const timeout = AbortSignal.timeout(options.timeoutMs);
      const combined = signal ? AbortSignal.any([signal, timeout]) : timeout;
      let response: Response;
      try {
        response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'idempotency-key': idempotencyKey },
          body: JSON.stringify({ order_id: orderId }),
          signal: combined,
        });
      } catch (err) {
        const timedOut = timeout.aborted;
        throw ApplicationFailure.create({
          type: FailureType.WarehouseUnavailable,
          message: timedOut
            ? `warehouse did not answer within ${options.timeoutMs} ms`
            : `warehouse unreachable: ${errorMessage(err)}`,
          details: [{ orderId, cause: timedOut ? 'timeout' : 'network' }],
        });
      }

      if (response.ok) {
        const body = (await response.json().catch(() => ({}))) as { shipment_id?: unknown };
        return {
          shipmentId: typeof body.shipment_id === 'string' ? body.shipment_id : 'unknown',
          replayed: response.headers.get('idempotent-replayed') === 'true',
        };
      }
      // Drain the body so the connection can be reused.
      const text = await response.text().catch(() => '');
      const details = [{ orderId, status: response.status, body: text.slice(0, 500) }];

      if (response.status === 429) {
        const retryAfter = response.headers.get('retry-after');
        // Undefined when absent or unreadable: the retry budget then uses its own fallback wait.
        const rateLimit: RateLimitDetails = { retryAfterMs: parseRetryAfterMs(retryAfter) };
        throw ApplicationFailure.create({
          type: FailureType.WarehouseRateLimited,
          message: `warehouse rate-limited the request (Retry-After: ${retryAfter ?? 'none'})`,
          details: [{ ...details[0], ...rateLimit }],
        });
      }
      if (response.status >= 400 && response.status < 500 && response.status !== 408) {
        throw ApplicationFailure.create({
          type: FailureType.WarehouseRejected,
          message: `warehouse rejected the shipment request with ${response.status}`,
          details,
          nonRetryable: true,
        });
      }
      throw ApplicationFailure.create({
        type: FailureType.WarehouseUnavailable,
        message: `warehouse answered ${response.status}`,
        details,
      });
    },
  };
}

function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}
