import { type Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { ProviderEventStarter } from '../http/providers/delivery';
import { PAYMENTS_TASK_QUEUE } from '../shared/constants';
import type { DisputeEvent, RefundEvent } from '../shared/payment-events';
import { createPaymentStarter, TemporalUnavailableError } from './payment-starter';

/**
 * The webhook's starter: payments as createPaymentStarter starts them, and refunds and disputes
 * under `refund-<event id>` / `dispute-<event id>` with the same ID policies (a redelivery, while
 * running or after, starts nothing; a Temporal outage is a TemporalUnavailableError, so a 503).
 * The refund and dispute workflows are the order side's (src/workflows); once
 * src/temporal/payment-starter.ts starts them itself (contract.md), this module goes.
 */
export function createProviderEventStarter(
  client: Client,
  options: { startTimeoutMs: number },
): ProviderEventStarter {
  const payments = createPaymentStarter(client, options);
  const startKeyed = async (
    workflowType: string,
    workflowId: string,
    event: RefundEvent | DisputeEvent,
  ) => {
    try {
      await client.connection.withDeadline(Date.now() + options.startTimeoutMs, () =>
        client.workflow.start(workflowType, {
          workflowId,
          taskQueue: PAYMENTS_TASK_QUEUE,
          args: [event],
          workflowIdConflictPolicy: 'FAIL',
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          memo: { eventId: event.eventId, paymentRef: event.paymentRef, amount: event.amount },
        }),
      );
      return { workflowId, duplicate: false as const };
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) {
        // The first delivery's body is not compared: a refund's or dispute's event ID is its
        // provider's, and the workflow keyed by it records it once whatever a retry carries.
        return {
          workflowId,
          duplicate: true as const,
          existing: { known: true as const, orderId: event.orderId, amount: event.amount },
        };
      }
      throw new TemporalUnavailableError(err);
    }
  };
  return {
    start: (input) => payments.start(input),
    startRefund: (event) => startKeyed('refundWorkflow', `refund-${event.eventId}`, event),
    startDispute: (event) => startKeyed('disputeWorkflow', `dispute-${event.eventId}`, event),
  };
}
