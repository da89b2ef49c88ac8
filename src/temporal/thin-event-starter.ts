import type { Client } from '@temporalio/client';
import { thinEventWorkflowId, type ThinEventWorkflowInput } from '../shared/thin-event';
import { startOnce } from './payment-starter';

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
      const started = await startOnce(
        client,
        Date.now() + options.startTimeoutMs,
        'thinEventWorkflow',
        {
          workflowId,
          args: [input],
          memo: { eventId: input.eventId, type: input.notification.type },
        },
      );
      return { workflowId, duplicate: !started };
    },
  };
}
