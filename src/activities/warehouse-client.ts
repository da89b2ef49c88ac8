import { ApplicationFailure } from '@temporalio/common';
import { FailureType, type RateLimitDetails } from '../shared/errors';
import { parseRetryAfterMs } from './retry-after';

export interface ShipmentReceipt {
  shipmentId: string;
  /** True when the warehouse had already seen this idempotency key (a retry of an earlier call). */
  replayed: boolean;
}

/** `cancelled` (now or earlier: not an error), or `already_shipped` (409): only a return undoes it. */
export interface CancelReceipt {
  outcome: 'cancelled' | 'already_shipped';
  replayed: boolean;
}

export interface WarehouseClient {
  requestShipment(input: {
    orderId: number;
    idempotencyKey: string;
    signal?: AbortSignal;
  }): Promise<ShipmentReceipt>;
  /** `shipmentRef`: the shipment's ID, or the Idempotency-Key it was requested with. */
  cancelShipment(input: {
    orderId: number;
    shipmentRef: string;
    idempotencyKey: string;
    signal?: AbortSignal;
  }): Promise<CancelReceipt>;
}

/** Rejected requests are non-retryable, 429 carries Retry-After, everything else is an outage. */
export function createWarehouseClient(options: {
  baseUrl: string;
  timeoutMs: number;
}): WarehouseClient {
  /** One POST; a network failure or a timeout is a retryable outage. */
  async function sendToWarehouse(
    path: string,
    body: unknown,
    input: { orderId: number; idempotencyKey: string; signal?: AbortSignal },
  ): Promise<Response> {
    // Abandon a hung call after timeoutMs, or earlier if the activity is cancelled.
    const timeout = AbortSignal.timeout(options.timeoutMs);
    const signal = input.signal ? AbortSignal.any([input.signal, timeout]) : timeout;
    try {
      return await fetch(new URL(path, options.baseUrl), {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'idempotency-key': input.idempotencyKey },
        body: JSON.stringify(body),
        signal,
      });
    } catch (err) {
      const timedOut = timeout.aborted;
      throw ApplicationFailure.create({
        type: FailureType.WarehouseUnavailable,
        message: timedOut
          ? `warehouse did not answer within ${options.timeoutMs} ms`
          : `warehouse unreachable: ${errorMessage(err)}`,
        details: [{ orderId: input.orderId, cause: timedOut ? 'timeout' : 'network' }],
      });
    }
  }

  return {
    async requestShipment({ orderId, idempotencyKey, signal }) {
      const response = await sendToWarehouse(
        '/v1/shipments',
        { order_id: orderId },
        { orderId, idempotencyKey, signal },
      );
      if (!response.ok) throw await failureOf(response, orderId, 'the shipment request');
      const body = (await response.json().catch(() => ({}))) as { shipment_id?: unknown };
      return {
        shipmentId: typeof body.shipment_id === 'string' ? body.shipment_id : 'unknown',
        replayed: response.headers.get('idempotent-replayed') === 'true',
      };
    },

    async cancelShipment({ orderId, shipmentRef, idempotencyKey, signal }) {
      const response = await sendToWarehouse(
        `/v1/shipments/${encodeURIComponent(shipmentRef)}/cancel`,
        {},
        { orderId, idempotencyKey, signal },
      );
      const replayed = response.headers.get('idempotent-replayed') === 'true';
      if (response.ok) {
        await response.body?.cancel();
        return { outcome: 'cancelled', replayed };
      }
      if (response.status === 409) {
        // Only the partner's own word for "too late" is an answer; any other conflict is not.
        const text = await response.text().catch(() => '');
        if (errorCodeOf(text) === 'already_shipped')
          return { outcome: 'already_shipped', replayed };
        throw failureFrom(response, text, orderId, 'the cancel');
      }
      throw await failureOf(response, orderId, 'the cancel');
    },
  };
}

/** The failure a non-2xx answer stands for (reads the body, so the connection can be reused). */
async function failureOf(
  response: Response,
  orderId: number,
  what: string,
): Promise<ApplicationFailure> {
  return failureFrom(response, await response.text().catch(() => ''), orderId, what);
}

function failureFrom(
  response: Response,
  text: string,
  orderId: number,
  what: string,
): ApplicationFailure {
  const details = [{ orderId, status: response.status, body: text.slice(0, 500) }];
  if (response.status === 429) {
    const retryAfter = response.headers.get('retry-after');
    // Undefined when absent or unreadable: the retry budget then uses its own fallback wait.
    const rateLimit: RateLimitDetails = { retryAfterMs: parseRetryAfterMs(retryAfter) };
    return ApplicationFailure.create({
      type: FailureType.WarehouseRateLimited,
      message: `warehouse rate-limited ${what} (Retry-After: ${retryAfter ?? 'none'})`,
      details: [{ ...details[0], ...rateLimit }],
    });
  }
  if (response.status >= 400 && response.status < 500 && response.status !== 408) {
    return ApplicationFailure.create({
      type: FailureType.WarehouseRejected,
      message: `warehouse rejected ${what} with ${response.status}`,
      details,
      nonRetryable: true,
    });
  }
  return ApplicationFailure.create({
    type: FailureType.WarehouseUnavailable,
    message: `warehouse answered ${response.status}`,
    details,
  });
}

function errorCodeOf(text: string): string | undefined {
  try {
    const body = JSON.parse(text) as { error?: unknown };
    return typeof body.error === 'string' ? body.error : undefined;
  } catch {
    return undefined;
  }
}

function errorMessage(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as { cause?: unknown }).cause;
    return cause instanceof Error ? `${err.message} (${cause.message})` : err.message;
  }
  return String(err);
}
