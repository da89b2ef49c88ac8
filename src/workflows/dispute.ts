import { log } from '@temporalio/workflow';
import { disputeAlertWorkflowId } from '../shared/alert';
import { orderWorkflowId } from '../shared/order';
import type { DisputeEvent } from '../shared/payment-events';
import { intakeSteps } from './intake-steps';
import { raiseAlertOnce } from './raise-alert';

const { record: recordDispute, handOver: handOverDisputeToOrder } = intakeSteps(
  'dispute',
  'recordDispute',
  'handOverDisputeToOrder',
);

/** What became of one dispute event. */
export interface DisputeWorkflowResult {
  /** The dispute-opened alert was started by this run (false: raised before, or a closure). */
  alerted: boolean;
  /** The order of the disputed payment; null while that payment is not recorded. */
  orderId?: number | null;
  /** The order workflow it was handed to; null when kept for its payment, or already handled. */
  orderWorkflowId?: string | null;
}

/**
 * Takes one dispute event (workflow ID `dispute-<event id>`): records it once, raises one alert
 * per opened dispute (with the evidence deadline; the alert carries the Web UI link), and hands
 * it to its order's workflow, which records on the order where its disputes stand (opened, won,
 * lost), whatever order the events come in. A dispute whose payment is not recorded yet is kept;
 * the payment claims it when it is recorded, and the order's workflow applies it then.
 */
export async function disputeWorkflow(event: DisputeEvent): Promise<DisputeWorkflowResult> {
  const recorded = await recordDispute(event);
  const { orderId } = recorded;
  // Handed over before the alert, in the same workflow task as the record (both local): the
  // order's state does not wait for the alert's child start.
  const handOver =
    orderId === null
      ? { handedOver: false }
      : await handOverDisputeToOrder({
          orderId,
          event: { kind: 'dispute', eventId: event.eventId },
        });
  const alerted = event.status === 'opened' ? await alertOpened(event, orderId) : false;
  if (event.status !== 'opened') log.info('dispute closed', { ...event });
  return {
    alerted,
    orderId,
    orderWorkflowId: orderId !== null && handOver.handedOver ? orderWorkflowId(orderId) : null,
  };
}

/** One alert per dispute, whatever number of events report it opened (its workflow ID). */
function alertOpened(event: DisputeEvent, orderId: number | null): Promise<boolean> {
  const due = event.evidenceDueBy ? `, evidence due by ${event.evidenceDueBy}` : '';
  return raiseAlertOnce(disputeAlertWorkflowId(event.disputeId), {
    kind: 'dispute',
    // The order matched through the payment; the one the event names while that is unknown.
    orderId: orderId ?? event.orderId ?? null,
    failureType: 'DisputeOpened',
    failureMessage: `payment ${event.paymentRef} is disputed (${event.disputeId}, amount ${event.amount}${event.reason ? `, ${event.reason}` : ''})${due}`,
  });
}
