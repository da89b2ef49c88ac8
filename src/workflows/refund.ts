import { orderWorkflowId } from '../shared/order';
import type { RefundEvent } from '../shared/payment-events';
import { intakeSteps } from './intake-steps';

const { record: recordRefund, handOver: handOverRefundToOrder } = intakeSteps(
  'refund',
  'recordRefund',
  'handOverRefundToOrder',
);

/** What became of one refund event. */
export interface RefundWorkflowResult {
  /** The order whose payment it refunds; null while that payment is not recorded. */
  orderId: number | null;
  /** The order workflow it was handed to; null when kept for its payment, or already handled. */
  orderWorkflowId: string | null;
}

/**
 * Takes one refund event (workflow ID `refund-<event id>`): records it once and hands it to its
 * order's workflow, which adds the order's refunds up and does what the total calls for. A
 * refund whose payment is not recorded yet is kept; the payment claims it when it is recorded,
 * and the order's fulfilment reads it then.
 */
export async function refundWorkflow(event: RefundEvent): Promise<RefundWorkflowResult> {
  const recorded = await recordRefund(event);
  if (recorded.orderId === null) return { orderId: null, orderWorkflowId: null };
  const handOver = await handOverRefundToOrder({
    orderId: recorded.orderId,
    event: { kind: 'refund', eventId: event.eventId },
  });
  return {
    orderId: recorded.orderId,
    orderWorkflowId: handOver.handedOver ? orderWorkflowId(recorded.orderId) : null,
  };
}
