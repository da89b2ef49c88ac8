import { ApplicationFailure } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time';
import { Context, type Info } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type {
  createOrdersRepository,
  createPaymentsRepository,
  PartnerPausesRepository,
} from '../db';
import { FailureType, type RateLimitDetails } from '../shared/errors';
import { shipmentCancelIdempotencyKey, shipmentIdempotencyKey } from '../shared/constants';
import type { PaymentWorkflowInput } from '../shared/payment';
import { warehouseAttemptFailedSignal, type WarehouseAttemptFailed } from '../shared/order';
import {
  retryDelayAfterAttempt,
  RetryPolicies,
  WAREHOUSE_BACKOFF_SECONDS,
  WAREHOUSE_RATE_LIMIT_FALLBACK_SECONDS,
} from '../shared/retry-policies';
import { retryAfter } from './retry-by-cause';
import { atCrashPoint } from './crash-points';
import { failIfPartnerPaused } from './partner-activities';
import type { CancelReceipt, ShipmentReceipt, WarehouseClient } from './warehouse-client';
import { PARTNER_RELEASE_MAX_WAIT_MS, type PartnerRelease } from '../shared/partner';

export interface PaymentActivityDeps {
  payments: ReturnType<typeof createPaymentsRepository>;
  orders: ReturnType<typeof createOrdersRepository>;
  warehouse: WarehouseClient;
  /** Temporal client on the worker's own connection, to tell a workflow how its call stands. */
  client: Client;
  /** Read before and after each warehouse call: a paused partner is not called. */
  partnerPauses: PartnerPausesRepository;
}

/**
 * Outcome of recording a payment, read from its row: the same for every call with the event, so
 * a repeated hand-over hands over the same decision.
 */
export type RecordPaymentResult = PaymentRecorded | PaymentKeptUnmatched;

/** The payment is recorded (results without `kind`: every result before unmatched existed). */
export interface PaymentRecorded {
  kind?: undefined;
  paymentId: number;
  /** This call (or an earlier attempt of this run) inserted the row. */
  created: boolean;
  /** This payment moved the order from pending to paid: it owns the fulfilment. */
  firstForOrder: boolean;
  /**
   * The amount equals the order's total. False: the payment paid nothing and is flagged for
   * review. Absent in results recorded before this field existed (read as a double charge).
   */
  amountMatchesOrder?: boolean;
  /** Disputes of this payment were recorded before it: the order workflow applies them. */
  disputed?: boolean;
}

/** The order does not exist: the event is kept in the unmatched inbox, and nothing follows. */
export interface PaymentKeptUnmatched {
  kind: 'unmatched';
  unmatchedId: number;
  /** This call (or an earlier attempt of this run) kept it; false for a redelivery. */
  created: boolean;
}

export type ShipmentStatus = 'requested' | 'failed' | 'cancelled';

/** A third of the 3 s heartbeat timeout that workflows give warehouse calls. */
const HEARTBEAT_INTERVAL_MS = 1_000;

/** How long a failed attempt waits for its best-effort signal before it reports the failure. */
const ATTEMPT_SIGNAL_TIMEOUT_MS = 2_000;

/**
 * Activities of the payment flow. Each does one external effect and is safe to run more than
 * once: activities are at-least-once, like the seed's queued jobs.
 */
export function createPaymentActivities(deps: PaymentActivityDeps) {
  return {
    /**
     * Records the payment for one provider event: insert-or-get on the UNIQUE provider_event_id,
     * telling whether this call created the row and what the recording decided (whether it paid
     * the order). A redelivery, or an operator's retry of a payment whose hand-over gave up,
     * finds the row and gets the same decision, so the hand-over that follows is the same.
     * A payment for an order that does not exist is kept in the unmatched inbox instead, in the
     * same transaction: the run completes, and an operator attaches, refunds or dismisses it.
     */
    async recordPayment(input: PaymentWorkflowInput): Promise<RecordPaymentResult> {
      const log = Context.current().log;
      const result = await atCrashPoint('recordPayment.commit', () =>
        deps.payments.recordPayment({
          providerEventId: input.eventId,
          orderId: input.orderId,
          amount: input.amount,
          paymentRef: input.paymentRef,
          currency: input.currency,
          // An earlier attempt of this run may have committed the row and died before reporting:
          // the run ID lets this attempt recognise the row as its own.
          recordedByRunId: Context.current().info.workflowExecution?.runId,
        }),
      );
      switch (result.kind) {
        case 'created':
        case 'existing': {
          const created = result.kind === 'created';
          log.info(created ? 'payment recorded' : 'payment already recorded', {
            eventId: input.eventId,
            orderId: input.orderId,
            paymentId: result.payment.id,
          });
          const { amountMatchesOrder, firstForOrder } = result;
          if (created && !amountMatchesOrder) {
            log.warn('payment does not match the order total: the order is not paid by it', {
              eventId: input.eventId,
              orderId: input.orderId,
              amount: input.amount,
            });
          }
          return {
            paymentId: result.payment.id,
            created,
            firstForOrder,
            amountMatchesOrder,
            ...(result.disputed ? { disputed: true } : {}),
          };
        }
        case 'unknown_order':
          // A warning, not an error: the money is kept on record and waits for a person.
          log.warn(
            result.created
              ? 'payment for an unknown order kept as unmatched (npm run ops -- unmatched list)'
              : 'payment for an unknown order already kept as unmatched: redelivery counted',
            { eventId: input.eventId, orderId: input.orderId, unmatchedId: result.unmatchedId },
          );
          return { kind: 'unmatched', unmatchedId: result.unmatchedId, created: result.created };
        case 'conflict':
          throw ApplicationFailure.create({
            type: FailureType.PaymentEventConflict,
            message: `event ${input.eventId} was already recorded for order ${result.payment.orderId} with amount ${result.payment.amount}`,
            details: [{ eventId: input.eventId, received: input, recorded: result.payment }],
            nonRetryable: true,
          });
      }
    },

    /**
     * Asks the warehouse to ship the order. The idempotency key is derived from the order, so a
     * retry (or a late original that outlived its timeout) names the same shipment and the
     * warehouse creates it once. The server schedules the attempts (RetryPolicies.
     * warehouseNotification); a failed one tells it how long to wait by its cause: the seed's
     * Backoff list for an outage, the partner's Retry-After for a 429. A 4xx is non-retryable.
     */
    async notifyWarehouse(
      input: { orderId: number } & Partial<PartnerRelease>,
    ): Promise<ShipmentReceipt> {
      const ctx = Context.current();
      // Heartbeat while the partner thinks: a worker that dies mid-call is noticed by the
      // server after the heartbeat timeout, not after the whole start-to-close timeout.
      const heartbeat = setInterval(() => ctx.heartbeat(), HEARTBEAT_INTERVAL_MS);
      try {
        await waitForReleaseSlot(ctx, input);
        // An attempt the server started after the pause (a retry due while paused) does not
        // call: the workflow holds the order instead, and calls again after the resume.
        await failIfPartnerPaused(deps.partnerPauses, 'warehouse');
        const receipt = await atCrashPoint('notifyWarehouse.request', () =>
          deps.warehouse.requestShipment({
            orderId: input.orderId,
            idempotencyKey: shipmentIdempotencyKey(input.orderId),
            signal: ctx.cancellationSignal,
          }),
        );
        ctx.log.info('warehouse notified', { orderId: input.orderId, ...receipt });
        return receipt;
      } catch (err) {
        if (err instanceof ApplicationFailure && err.type === FailureType.PartnerPaused) throw err;
        // Paused while this call was in flight: its failure is the outage being held, not an
        // attempt of this order's budget (the workflow calls again after the resume).
        await failIfPartnerPaused(deps.partnerPauses, 'warehouse', err);
        const failure = warehouseRetry(err, ctx.info.attempt);
        const retrying = attemptToBeRetried(failure, ctx.info);
        const execution = ctx.info.workflowExecution;
        if (retrying && execution) {
          // Tells the attempt's own workflow, best effort: bounded by a short deadline, and a
          // failure is logged, never thrown, so the attempt still reports its own failure.
          await atCrashPoint('notifyWarehouse.signal', () =>
            deps.client.withDeadline(Date.now() + ATTEMPT_SIGNAL_TIMEOUT_MS, () =>
              deps.client.workflow
                .getHandle(execution.workflowId, execution.runId)
                .signal(warehouseAttemptFailedSignal, retrying),
            ),
          ).catch((signalErr: unknown) => {
            ctx.log.warn('could not tell the workflow about the failed warehouse attempt', {
              orderId: input.orderId,
              attempt: retrying.attempt,
              error: String(signalErr),
            });
          });
        }
        throw failure;
      } finally {
        clearInterval(heartbeat);
      }
    },

    /**
     * Asks the warehouse to cancel the order's shipment (a full refund came before it shipped).
     * The key is derived from the order, so every attempt, reset or repeated refund names the
     * same cancel and the warehouse answers it once: a retry after a cancel that went through
     * (its reply lost with the worker) hears `cancelled` again, not a conflict. `already_shipped`
     * is an answer, not a failure: the workflow turns it into a return review. A 429 waits the
     * partner's Retry-After; the rest waits the policy's backoff (RetryPolicies.
     * warehouseCancellation), and a 404 or 422 is not retried.
     */
    async cancelShipment(
      input: { orderId: number } & Partial<PartnerRelease>,
    ): Promise<CancelReceipt> {
      const ctx = Context.current();
      try {
        // A warehouse call like the shipment request: held while an operator has the warehouse
        // paused, released at the resume's rate (see notifyWarehouse).
        await waitForReleaseSlot(ctx, input);
        await failIfPartnerPaused(deps.partnerPauses, 'warehouse');
        const receipt = await atCrashPoint('cancelShipment.request', () =>
          deps.warehouse.cancelShipment({
            orderId: input.orderId,
            shipmentRef: shipmentIdempotencyKey(input.orderId),
            idempotencyKey: shipmentCancelIdempotencyKey(input.orderId),
            signal: ctx.cancellationSignal,
          }),
        );
        ctx.log.info('warehouse answered the shipment cancel', {
          orderId: input.orderId,
          ...receipt,
        });
        return receipt;
      } catch (err) {
        if (err instanceof ApplicationFailure && err.type === FailureType.PartnerPaused) throw err;
        // Paused while this call was in flight: held, not a failed cancel for a person to review.
        await failIfPartnerPaused(deps.partnerPauses, 'warehouse', err);
        if (err instanceof ApplicationFailure && err.type === FailureType.WarehouseRateLimited) {
          const { retryAfterMs } = (err.details?.[0] ?? {}) as RateLimitDetails;
          throw retryAfter(
            err,
            retryAfterMs ?? WAREHOUSE_RATE_LIMIT_FALLBACK_SECONDS * 1000,
            ctx.info.attempt,
            { benign: true },
          );
        }
        throw err;
      }
    },

    /** Records where the order's shipment stands; idempotent (setting the same status twice is harmless). */
    async setShipmentStatus(input: { orderId: number; status: ShipmentStatus }): Promise<void> {
      const updated = await atCrashPoint('setShipmentStatus.commit', () =>
        deps.orders.setShipmentStatus(input.orderId, input.status),
      );
      if (!updated) {
        throw ApplicationFailure.create({
          type: FailureType.OrderNotFound,
          message: `order ${input.orderId} does not exist`,
          nonRetryable: true,
        });
      }
    },
  };
}

/**
 * A call released from a pause at a rate keeps its slot to the millisecond; bounded, so a skewed
 * clock cannot hold the attempt past its start-to-close timeout.
 */
async function waitForReleaseSlot(ctx: Context, release: Partial<PartnerRelease>): Promise<void> {
  const early = Math.min((release.notBefore ?? 0) - Date.now(), PARTNER_RELEASE_MAX_WAIT_MS);
  if (early > 0) await ctx.sleep(early);
}

/**
 * What the workflow is told about a failed attempt the server will retry; undefined when it will
 * not (non-retryable, the last attempt, or the next one would start past the deadline): the
 * workflow then sees the failure itself.
 */
function attemptToBeRetried(failure: unknown, info: Info): WarehouseAttemptFailed | undefined {
  if (!(failure instanceof ApplicationFailure) || failure.nonRetryable) return undefined;
  // The policy the server sends with the task; the test server sends none, and the workflow
  // schedules this activity with the warehouse preset.
  const maximumAttempts =
    info.retryPolicy?.maximumAttempts ?? RetryPolicies.warehouseNotification.retry.maximumAttempts;
  if (maximumAttempts > 0 && info.attempt >= maximumAttempts) return undefined;
  const nextRetryDelayMs = msToNumber(failure.nextRetryDelay ?? 0);
  const deadline = info.scheduleToCloseTimeoutMs
    ? info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs
    : Infinity;
  if (Date.now() + nextRetryDelayMs >= deadline) return undefined;
  const first = (failure.details?.[0] ?? {}) as { status?: unknown; cause?: unknown };
  const lastFailure =
    typeof first.status === 'number'
      ? String(first.status)
      : typeof first.cause === 'string'
        ? first.cause
        : (failure.type ?? 'error');
  return { attempt: info.attempt, maximumAttempts, nextRetryDelayMs, lastFailure };
}

/** The warehouse's failure with the wait its cause calls for; anything else unchanged. */
function warehouseRetry(err: unknown, attempt: number): unknown {
  if (!(err instanceof ApplicationFailure) || err.nonRetryable) return err;
  if (err.type === FailureType.WarehouseRateLimited) {
    const { retryAfterMs } = (err.details?.[0] ?? {}) as RateLimitDetails;
    return retryAfter(err, retryAfterMs ?? WAREHOUSE_RATE_LIMIT_FALLBACK_SECONDS * 1000, attempt, {
      benign: true,
    });
  }
  return retryAfter(
    err,
    retryDelayAfterAttempt(WAREHOUSE_BACKOFF_SECONDS, attempt) * 1000,
    attempt,
  );
}

export type PaymentActivities = ReturnType<typeof createPaymentActivities>;
