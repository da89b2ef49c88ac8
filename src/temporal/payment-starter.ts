import { type Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { PAYMENTS_TASK_QUEUE, paymentWorkflowId } from '../shared/constants';
import type { PaymentWorkflowInput } from '../shared/payment';
import { OrderIdSearchAttribute, PaymentEventIdSearchAttribute } from '../shared/search-attributes';
import type { paymentWorkflow } from '../workflows';

export interface StartedPayment {
  workflowId: string;
  /** True when an execution with this ID already existed (running or closed): nothing new started. */
  duplicate: boolean;
}

/** Starts payment workflows; the HTTP layer depends on this port, not on the Temporal client. */
export interface PaymentStarter {
  start(input: PaymentWorkflowInput): Promise<StartedPayment>;
}

/** Temporal could not be reached in time: the caller should answer 503 so the provider retries. */
export class TemporalUnavailableError extends Error {
  constructor(cause: unknown) {
    super('Temporal is unavailable', { cause });
    this.name = 'TemporalUnavailableError';
  }
}

/**
 * Starts `payment-<event id>` with the policies that make redelivery harmless:
 * - conflict policy FAIL: a delivery while the first is still running is rejected by the server
 *   (atomically, even for concurrent deliveries), which we report as a duplicate;
 * - reuse policy REJECT_DUPLICATE: a closed execution, Completed or Failed, is never re-run by a
 *   provider's redelivery. Re-running a failed payment is an operator's decision (see the
 *   operator CLI), not a side effect of the provider retrying its webhook.
 * Beyond the namespace's retention window the server forgets the ID; the UNIQUE constraint on
 * payments.provider_event_id then stops the second execution from doing anything.
 */
export function createPaymentStarter(
  client: Client,
  options: { startTimeoutMs: number },
): PaymentStarter {
  return {
    async start(input) {
      const workflowId = paymentWorkflowId(input.eventId);
      try {
        await client.connection.withDeadline(Date.now() + options.startTimeoutMs, () =>
          client.workflow.start<typeof paymentWorkflow>('paymentWorkflow', {
            workflowId,
            taskQueue: PAYMENTS_TASK_QUEUE,
            args: [input],
            workflowIdConflictPolicy: 'FAIL',
            workflowIdReusePolicy: 'REJECT_DUPLICATE',
            // Shown in workflow lists (Web UI, operator CLI) without reading the history.
            memo: { orderId: input.orderId, eventId: input.eventId },
            // Filters for the Web UI and the CLI (`OrderId = 12`), set at start: no workflow code
            // changes, so no patch. The server must know them (src/shared/search-attributes.ts).
            typedSearchAttributes: [
              { key: OrderIdSearchAttribute, value: input.orderId },
              { key: PaymentEventIdSearchAttribute, value: input.eventId },
            ],
          }),
        );
        return { workflowId, duplicate: false };
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError)
          return { workflowId, duplicate: true };
        // Anything else is on our side of the wire (server down, deadline, overload): the event
        // is not durably queued, so the provider must deliver it again.
        throw new TemporalUnavailableError(err);
      }
    },
  };
}
