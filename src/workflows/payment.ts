import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { orderWorkflowId } from '../shared/order';
import { RetryPolicies } from '../shared/retry-policies';
import type { PaymentWorkflowInput, PaymentWorkflowResult } from '../shared/payment';

// One proxy per activity, each with its own Web UI summary (metadata, not matched on replay).
const { recordPayment } = proxyActivities<Activities>({
  ...RetryPolicies.databaseStep,
  summary: 'Record the payment (once per provider event)',
});
const { handOverToOrder } = proxyActivities<Activities>({
  ...RetryPolicies.temporalCall,
  summary: "Hand the payment to the order's workflow",
});

/**
 * Turns one payment event into exactly one recorded payment. Started with workflow ID
 * `payment-<event id>`. Only the execution that created the payment row hands it to the
 * order's workflow, which fulfils the order (the payment that paid it) or flags the payment for
 * review (a double charge, or an amount that is not the order's total).
 */
export async function paymentWorkflow(input: PaymentWorkflowInput): Promise<PaymentWorkflowResult> {
  const recorded = await recordPayment(input);
  if (!recorded.created) {
    // Another execution (or an earlier one, before the server forgot this workflow ID)
    // already recorded this event and handed it over.
    return { paymentId: recorded.paymentId, created: false, orderWorkflowId: null };
  }
  await handOverToOrder({
    orderId: input.orderId,
    event: {
      eventId: input.eventId,
      paymentId: recorded.paymentId,
      amount: input.amount,
      firstForOrder: recorded.firstForOrder,
      amountMatchesOrder: recorded.amountMatchesOrder,
    },
  });
  return {
    paymentId: recorded.paymentId,
    created: true,
    orderWorkflowId: orderWorkflowId(input.orderId),
  };
}
