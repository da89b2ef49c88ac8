import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { OrdersRepository, PartnerPausesRepository, PaymentsRepository } from '../db';
import { FailureType } from '../shared/errors';
import { shipmentCancelIdempotencyKey, shipmentIdempotencyKey } from '../shared/constants';
import type { PaymentWorkflowInput } from '../shared/payment';
import { warehouseAttemptFailedSignal } from '../shared/order';
import type { PartnerRelease } from '../shared/partner';
import { atCrashPoint } from './crash-points';
import type { CancelReceipt, ShipmentReceipt, WarehouseClient } from './warehouse-client';
import {
  attemptToBeRetried,
  pausableWarehouseCall,
  rateLimitedRetry,
  warehouseRetry,
} from './warehouse-attempts';

export interface PaymentActivityDeps {
  payments: PaymentsRepository;
  orders: OrdersRepository;
  warehouse: WarehouseClient;
  client: Client;
  /** Read before and after each warehouse call: a paused partner is not called. */
  partnerPauses: PartnerPausesRepository;
}

/** Read from its row: a repeated hand-over hands over the same decision. */
export type RecordPaymentResult = PaymentRecorded | PaymentKeptUnmatched;

/** The payment is recorded (results without `kind`: every result before unmatched existed). */
export interface PaymentRecorded {
  kind?: undefined;
  paymentId: number;
  created: boolean;
  firstForOrder: boolean;
  /** False: paid nothing, flagged for review. Absent in older results (read as a double charge). */
  amountMatchesOrder?: boolean;
  /** Disputes of this payment were recorded before it: the order workflow applies them. */
  disputed?: boolean;
}

/** The order does not exist: the event is kept in the unmatched inbox, and nothing follows. */
export interface PaymentKeptUnmatched {
  kind: 'unmatched';
  unmatchedId: number;
  created: boolean;
}

export type ShipmentStatus = 'requested' | 'failed' | 'cancelled';

/** A third of the 3 s heartbeat timeout that workflows give warehouse calls. */
const HEARTBEAT_INTERVAL_MS = 1_000;

/** How long a failed attempt waits for its best-effort signal before it reports the failure. */
const ATTEMPT_SIGNAL_TIMEOUT_MS = 2_000;

/** Each activity does one external effect and is safe to run again (at-least-once). */
export function createPaymentActivities(deps: PaymentActivityDeps) {
  return {
    /**
     * Insert-or-get on the UNIQUE provider_event_id: a redelivery, or an operator's retry, finds
     * the row and gets the same decision, so the hand-over that follows is the same. An unknown
     * order's payment is kept in the unmatched inbox in the same transaction.
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
     * The key is derived from the order, so a retry (or a late original that outlived its
     * timeout) names the same shipment. A failed attempt waits by its cause: the seed's Backoff
     * list for an outage, the partner's Retry-After for a 429; a 4xx is non-retryable.
     */
    async notifyWarehouse(
      input: { orderId: number } & Partial<PartnerRelease>,
    ): Promise<ShipmentReceipt> {
      const ctx = Context.current();
      // A worker that dies mid-call is noticed after the heartbeat timeout, not start-to-close.
      const heartbeat = setInterval(() => ctx.heartbeat(), HEARTBEAT_INTERVAL_MS);
      try {
        return await pausableWarehouseCall(
          ctx,
          deps.partnerPauses,
          input,
          async () => {
            const receipt = await atCrashPoint('notifyWarehouse.request', () =>
              deps.warehouse.requestShipment({
                orderId: input.orderId,
                idempotencyKey: shipmentIdempotencyKey(input.orderId),
                signal: ctx.cancellationSignal,
              }),
            );
            ctx.log.info('warehouse notified', { orderId: input.orderId, ...receipt });
            return receipt;
          },
          async (err) => {
            const failure = warehouseRetry(err, ctx.info.attempt);
            const retrying = attemptToBeRetried(failure, ctx.info);
            const execution = ctx.info.workflowExecution;
            if (retrying && execution) {
              // Best effort and bounded: the attempt still reports its own failure.
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
          },
        );
      } finally {
        clearInterval(heartbeat);
      }
    },

    /**
     * A full refund came before it shipped. The key is derived from the order, so a retry after
     * a cancel whose reply was lost hears `cancelled` again, not a conflict. `already_shipped` is
     * an answer (the workflow turns it into a return review); a 404 or 422 is not retried.
     */
    async cancelShipment(
      input: { orderId: number } & Partial<PartnerRelease>,
    ): Promise<CancelReceipt> {
      const ctx = Context.current();
      return pausableWarehouseCall(
        ctx,
        deps.partnerPauses,
        input,
        async () => {
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
        },
        (err) => {
          if (err instanceof ApplicationFailure && err.type === FailureType.WarehouseRateLimited) {
            throw rateLimitedRetry(err, ctx.info.attempt);
          }
          throw err;
        },
      );
    },

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

export type PaymentActivities = ReturnType<typeof createPaymentActivities>;
