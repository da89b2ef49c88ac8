import { workflowInfo } from '@temporalio/workflow';
import { orderWorkflowId } from '../shared/order';
import type { PaymentWorkflowInput, PaymentWorkflowResult } from '../shared/payment';
import { intakeSteps } from './intake-steps';

const { record: recordPayment, handOver: handOverToOrder } = intakeSteps(
  'payment',
  'recordPayment',
  'handOverToOrder',
);

// PINNED, as every workflow here (the workers' default, src/workers/deployment.ts): a payment
// run lasts milliseconds (a day at most, through a database outage) and finishes on the build
// that started it, so a change here is a new build, never a patch (docs/deploys.md).

/**
 * Turns one payment event into exactly one recorded payment. Started with workflow ID
 * `payment-<event id>`. Every execution hands the payment to the order's workflow, which
 * fulfils the order (the payment that paid it) or flags the payment for review (a double charge,
 * or an amount that is not the order's total), unless an order run already finished with it.
 * So a run that finds the row already recorded still hands it over: an operator's retry of a
 * payment whose hand-over gave up after the row committed (a reset starts from the first
 * workflow task, and the new run ID does not own the row), or a redelivery after the server
 * forgot this workflow ID whose first hand-over never arrived. A payment for an order that does
 * not exist is kept in the unmatched inbox, and the run completes saying so.
 */
export async function paymentWorkflow(input: PaymentWorkflowInput): Promise<PaymentWorkflowResult> {
  const recorded = await recordPayment(input);
  if (recorded.kind === 'unmatched') {
    // No order to hand over to: the inbox entry is the record, and an operator's attach starts
    // a new payment run for it. Completing (not failing) keeps retention out of it and raises
    // no alert: the entry is what asks for a person.
    return {
      kind: 'unmatched',
      reason: 'unknown_order',
      unmatchedId: recorded.unmatchedId,
      created: recorded.created,
      orderId: input.orderId,
    };
  }
  const handOver = await handOverToOrder({
    orderId: input.orderId,
    event: {
      eventId: input.eventId,
      paymentId: recorded.paymentId,
      amount: input.amount,
      firstForOrder: recorded.firstForOrder,
      amountMatchesOrder: recorded.amountMatchesOrder,
      paidAt: workflowInfo().startTime.getTime(),
      ...(recorded.disputed ? { disputed: true } : {}),
    },
  });
  return {
    paymentId: recorded.paymentId,
    created: recorded.created,
    orderWorkflowId: handOver.handedOver ? orderWorkflowId(input.orderId) : null,
  };
}
