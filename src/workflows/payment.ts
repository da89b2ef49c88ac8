import { patched, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { orderWorkflowId } from '../shared/order';
import { RetryPolicies } from '../shared/retry-policies';
import type { PaymentWorkflowInput, PaymentWorkflowResult } from '../shared/payment';
import { localStep } from './local-step';

// Both steps take milliseconds (one database transaction; one signal-with-start on the worker's
// own connection), so they run as local activities (./local-step.ts): in the worker, inside the
// workflow task, each recorded as a marker that names its activity type. A payment is then one
// workflow task and no activity task. Same presets as before, applied by the SDK.
const localRecordPayment = localStep('recordPayment', {
  ...RetryPolicies.databaseStep,
  summary: 'Record the payment (once per provider event)',
});
const localHandOverToOrder = localStep('handOverToOrder', {
  ...RetryPolicies.temporalCall,
  summary: "Hand the payment to the order's workflow",
});

// LEGACY: the same steps as activities, for runs started before patch 'local-payment-steps'.
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
  // Patch 'local-payment-steps' (2026-12-01): both steps as local activities (markers instead of
  // scheduled activities: new commands). A run that scheduled recordPayment before the deploy
  // replays and finishes on activities. Payment runs last milliseconds (a day at most, during a
  // database outage), so this can become deprecatePatch from 2026-12-03 once none from before
  // the deploy is open (docs/deploys.md).
  const local = patched('local-payment-steps');
  const record = local ? localRecordPayment : recordPayment;
  const handOver = local ? localHandOverToOrder : handOverToOrder;

  const recorded = await record(input);
  if (!recorded.created) {
    // Another execution (or an earlier one, before the server forgot this workflow ID)
    // already recorded this event and handed it over.
    return { paymentId: recorded.paymentId, created: false, orderWorkflowId: null };
  }
  await handOver({
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
