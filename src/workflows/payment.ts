import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { NON_RETRYABLE_FAILURE_TYPES } from '../shared/errors';
import { orderWorkflowId } from '../shared/order';
import type { PaymentWorkflowInput, PaymentWorkflowResult } from '../shared/payment';

// Database and Temporal calls. A healthy call takes milliseconds and the database abandons a
// statement after 5 s (busy_timeout / statement_timeout), so 10 s means the attempt is lost and
// the server may retry it. Attempts are unlimited: a payment must not be dropped because the
// database was down for an hour; each attempt is idempotent, and `npm run ops -- stuck` shows
// long outages.
const databaseCall: ActivityOptions = {
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    nonRetryableErrorTypes: [...NON_RETRYABLE_FAILURE_TYPES],
  },
};
// One proxy per activity, each with its own Web UI summary (metadata, not matched on replay).
const { recordPayment } = proxyActivities<Activities>({
  ...databaseCall,
  summary: 'Record the payment (once per provider event)',
});
const { handOverToOrder } = proxyActivities<Activities>({
  ...databaseCall,
  summary: "Hand the payment to the order's workflow",
});

/**
 * Turns one payment event into exactly one recorded payment. Started with workflow ID
 * `payment-<event id>`. Only the execution that created the payment row hands it to the
 * order's workflow, which fulfils the order (first payment) or flags a double charge.
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
    },
  });
  return {
    paymentId: recorded.paymentId,
    created: true,
    orderWorkflowId: orderWorkflowId(input.orderId),
  };
}
