import { type Client, WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { PAYMENTS_TASK_QUEUE } from '../shared/constants';
import { thinEventWorkflowId, type ThinEventWorkflowInput } from '../shared/thin-event';
import type { thinEventWorkflow } from '../workflows';
import { TemporalUnavailableError } from './payment-starter';

export interface StartedThinEvent {
  workflowId: string;
  /** The event's workflow already existed (a redelivery): nothing new started. */
  duplicate: boolean;
}

/** Starts the fetch of a Stripe thin event's object; the HTTP layer's port, as PaymentStarter. */
export interface ThinEventStarter {
  start(input: ThinEventWorkflowInput): Promise<StartedThinEvent>;
}

/**
 * Starts `thin-<event id>` with the payment starter's ID policies: a redelivery while it runs,
 * or after it closed, starts nothing (FAIL, REJECT_DUPLICATE); what the fetch resolves to is
 * keyed by the event ID again, so even a start after retention does nothing twice.
 */
export function createThinEventStarter(
  client: Client,
  options: { startTimeoutMs: number },
): ThinEventStarter {
  return {
    async start(input) {
      const workflowId = thinEventWorkflowId(input.eventId);
      try {
        await client.connection.withDeadline(Date.now() + options.startTimeoutMs, () =>
          client.workflow.start<typeof thinEventWorkflow>('thinEventWorkflow', {
            workflowId,
            taskQueue: PAYMENTS_TASK_QUEUE,
            args: [input],
            workflowIdConflictPolicy: 'FAIL',
            workflowIdReusePolicy: 'REJECT_DUPLICATE',
            memo: { eventId: input.eventId, type: input.notification.type },
          }),
        );
        return { workflowId, duplicate: false };
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError)
          return { workflowId, duplicate: true };
        throw new TemporalUnavailableError(err);
      }
    },
  };
}
