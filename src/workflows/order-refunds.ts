import { ActivityFailure, isCancellation } from '@temporalio/workflow';
import { refundReviewAlertWorkflowId, returnReviewAlertWorkflowId } from '../shared/alert';
import type { OrderPaymentEvent } from '../shared/order';
import { cancelShipment, steps } from './order-steps';
import { unlessPartnerPaused } from './partner-hold';
import { raiseAlertOnce } from './raise-alert';

// What the order workflow (./order.ts) does about money to give back: a recorded refund, and a
// payment that paid nothing, for a person to refund.

/**
 * A refund was recorded: the order's refunded total is added up again from every refund event
 * (amounts decide full or partial, whatever order they came in). Refunded in full, the order's
 * points are taken back, and a shipment the warehouse took is cancelled there (or, too late for
 * that, flagged for a return review with one alert). Before the warehouse had it, the fulfilment
 * reads the same total and ships nothing; while it retries the warehouse, it confirms nothing.
 */
export async function applyRefund(orderId: number): Promise<void> {
  const refunds = await steps.applyRefunds({ orderId });
  if (!refunds.fullyRefunded) return;
  // Once a person reviews a return (an earlier cancel came too late or failed), the workflow
  // does not cancel behind their back: a repeated full refund changes nothing there.
  if (refunds.shipmentStatus === 'requested' && !refunds.returnReviewRequested) {
    await stopShipment(orderId, refunds.refundedAmount);
  }
  await steps.reverseLoyaltyPoints({ orderId });
}

/**
 * Cancels the shipment of an order refunded in full. Cancelled: `shipment_status = cancelled`,
 * nothing for a person. The warehouse shipped it already, or the cancel failed for good (its
 * retries used up, or a 4xx): the parcel may be on its way, so a person reviews a return, told
 * by one alert (its workflow ID is the order's: a second refund, a reset or a retry adds none).
 * While an operator has the warehouse paused, the cancel is held like the shipment request.
 */
async function stopShipment(orderId: number, refundedAmount: number): Promise<void> {
  let why: { failureType: string; failureMessage: string };
  try {
    const receipt = await unlessPartnerPaused('warehouse', (release) =>
      cancelShipment({ orderId, ...release }),
    );
    if (receipt.outcome === 'cancelled') {
      await steps.setShipmentStatus({ orderId, status: 'cancelled' });
      return;
    }
    why = {
      failureType: 'RefundedAfterShipment',
      failureMessage: `order ${orderId} was refunded in full (${refundedAmount}) after the warehouse shipped it: review a return`,
    };
  } catch (err) {
    if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
    why = {
      failureType: 'ShipmentCancelFailed',
      failureMessage: `order ${orderId} was refunded in full (${refundedAmount}) but its shipment could not be cancelled (${err.cause?.message ?? err.message}): check with the warehouse, review a return`,
    };
  }
  await steps.requestReturnReview({ orderId });
  await raiseAlertOnce(returnReviewAlertWorkflowId(orderId), {
    kind: 'return_review',
    orderId,
    ...why,
  });
}

/**
 * A payment that paid nothing: a further payment of a paid order (a double charge), or one whose
 * amount is not the order's total (the order stays pending for the right payment). Keep it, flag
 * the order, tell a person. Both take the same steps, so histories match either way on replay.
 */
export async function flagForRefundReview(
  orderId: number,
  event: OrderPaymentEvent,
): Promise<void> {
  await steps.requestRefundReview({ orderId, eventId: event.eventId });
  const alert = {
    kind: 'refund_review' as const,
    orderId,
    ...(event.amountMatchesOrder === false
      ? {
          failureType: 'AmountMismatch',
          failureMessage: `order ${orderId} received event ${event.eventId} (payment ${event.paymentId}) for amount ${event.amount}, which is not its total: the payment does not pay the order; review a refund`,
        }
      : {
          failureType: 'DoubleCharge',
          failureMessage: `order ${orderId} was paid again by event ${event.eventId} (payment ${event.paymentId}, amount ${event.amount}): review a refund`,
        }),
  };
  await raiseAlertOnce(refundReviewAlertWorkflowId(orderId, event.eventId), alert);
}
