import {
  ActivityFailure,
  ApplicationFailure,
  isCancellation,
  log,
  setCurrentDetails,
} from '@temporalio/workflow';
import { FailureType } from '../shared/errors';
import type {
  FulfilmentFailedDetails,
  OrderPaymentEvent,
  OrderSettlementEvent,
  OrderWorkflowResult,
} from '../shared/order';
import { startInvoiceWorkflow } from './invoice';
import { countCompensation, countFulfilment, countShipment } from './order-metrics';
import { notifyWarehouse, sendOrderConfirmation, steps } from './order-steps';
import { unlessPartnerPaused } from './partner-hold';

// What the order workflow (./order.ts) does with the payment that paid the order, or with an
// operator's settlement: the warehouse, then the mail, the loyalty points and the invoice.

/**
 * Fulfils a paid order: the warehouse notification, retried by the server until its policy
 * gives up (compensating then), then the confirmation mail and the loyalty points. Not an order
 * whose refunds already add up to what paid it (a refund can be recorded before its payment is
 * handed over): nothing goes to the warehouse. Returns whether the warehouse took the order.
 */
export async function fulfil(
  orderId: number,
  event: Pick<OrderPaymentEvent, 'eventId' | 'paidAt'>,
  refundWaiting: () => boolean,
): Promise<boolean> {
  const refunds = await steps.applyRefunds({ orderId });
  // A cancelled shipment stays cancelled, whatever the refunds add up to later: never re-requested.
  if (refunds.fullyRefunded || refunds.shipmentStatus === 'cancelled') {
    log.info('order refunded in full before it was shipped: nothing goes to the warehouse', {
      orderId,
      eventId: event.eventId,
      refundedAmount: refunds.refundedAmount,
    });
    countFulfilment('refunded_before_shipment');
    return false;
  }
  try {
    await unlessPartnerPaused('warehouse', (release) => notifyWarehouse({ orderId, ...release }));
    setCurrentDetails('');
  } catch (err) {
    setCurrentDetails('');
    if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
    const cause = err.cause;
    const details: FulfilmentFailedDetails = {
      orderId,
      eventId: event.eventId,
      step: 'notifyWarehouse',
      reason: giveUpReason(err),
      attempts: attemptsOf(cause),
      lastFailureType:
        cause instanceof ApplicationFailure ? (cause.type ?? undefined) : cause?.name,
      lastFailureMessage: cause?.message ?? err.message,
    };
    await compensateFailedFulfilment(orderId, details);
    throw ApplicationFailure.create({
      type: FailureType.FulfilmentFailed,
      message: `order ${orderId} could not be handed to the warehouse (${details.reason}): ${details.lastFailureMessage}`,
      details: [details],
      nonRetryable: true,
      cause: err,
    });
  }
  countShipment(event);
  // A refund in full that came during the warehouse's retries: nothing confirms the order (mail,
  // points, invoice); the refund, next in the queue, cancels the shipment.
  if (refundWaiting() && (await steps.applyRefunds({ orderId })).fullyRefunded) {
    log.info('order refunded in full while the warehouse was retried: not confirmed', {
      orderId,
      eventId: event.eventId,
    });
    await steps.setShipmentStatus({ orderId, status: 'requested' });
    return true;
  }
  await afterWarehouseNotified(orderId);
  return true;
}

/**
 * An operator settled the pending order with the payments it had (`ops settle`): it is fulfilled
 * as a first payment would have, once (the settlement's event ID is one per order, and the
 * database's pending-to-paid claim let only the settlement or a payment pay it). Who, when and
 * why stay in the Web UI: the current details while it is fulfilled, the log and the result.
 */
export async function settle(
  orderId: number,
  event: OrderSettlementEvent,
  refundWaiting: () => boolean,
): Promise<OrderWorkflowResult['processed'][number]> {
  const settlement = {
    settledBy: event.settledBy,
    reason: event.reason,
    settledAt: event.settledAt,
  };
  log.info('order settled by an operator: fulfilling it', {
    orderId,
    eventId: event.eventId,
    paymentIds: event.paymentIds,
    ...settlement,
  });
  setCurrentDetails(`settled by ${event.settledBy} at ${event.settledAt}: ${event.reason}`);
  const shipped = await fulfil(
    orderId,
    { eventId: event.eventId, paidAt: Date.parse(event.settledAt) },
    refundWaiting,
  );
  return {
    eventId: event.eventId,
    outcome: shipped ? 'fulfilled' : 'refunded_before_shipment',
    settlement,
  };
}

/** The seed's failed(): leave the order in a state people can see and act on. */
async function compensateFailedFulfilment(
  orderId: number,
  details: FulfilmentFailedDetails,
): Promise<void> {
  await steps.setShipmentStatus({ orderId, status: 'failed' });
  countCompensation(details);
  log.error('fulfilment failed; order marked shipment_status=failed', { ...details });
}

/** Why the server stopped retrying, in the words of the seed's attributes. */
function giveUpReason(err: ActivityFailure): FulfilmentFailedDetails['reason'] {
  switch (err.retryState) {
    case 'MAXIMUM_ATTEMPTS_REACHED':
      return 'max_attempts';
    case 'TIMEOUT':
      return 'deadline';
    case 'NON_RETRYABLE_FAILURE':
      return 'non_retryable';
    default:
      return 'other';
  }
}

/** The attempt number the activity put in its failure's details, when it could. */
function attemptsOf(cause: Error | undefined): number | undefined {
  if (!(cause instanceof ApplicationFailure)) return undefined;
  const first = cause.details?.[0] as { attempts?: unknown } | undefined;
  return typeof first?.attempts === 'number' ? first.attempts : undefined;
}

/** The steps after the warehouse took the order. */
async function afterWarehouseNotified(orderId: number): Promise<void> {
  await steps.setShipmentStatus({ orderId, status: 'requested' });
  // The invoice (an abandoned child on `heavy`) starts as soon as the warehouse took the order,
  // beside the mail, so the workflow task its start costs runs while the mail is sent instead of
  // after the loyalty points (one round trip less before the run completes). The child is
  // started before the run may complete: the server drops an abandoned child whose start is
  // still pending when its parent closes.
  const invoice = startInvoiceWorkflow(orderId);
  // Awaited below; handled now, so a failed start is not an unhandled rejection meanwhile.
  invoice.catch(() => undefined);
  try {
    // Both run only here, one at a time per order: the mail's send-then-stamp guard and the
    // ledger's unique key never race with another run for the same order.
    await sendOrderConfirmation({ orderId });
    await steps.awardLoyaltyPoints({ orderId });
  } finally {
    await invoice;
  }
}
