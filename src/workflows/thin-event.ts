import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { StripeApiActivities } from '../activities/stripe-api-activities';
import { RetryPolicies } from '../shared/retry-policies';
import type { ThinEventResult, ThinEventWorkflowInput } from '../shared/thin-event';

const { fetchThinEventObject } = proxyActivities<StripeApiActivities>({
  // Stripe answers a GET in well under a second; an attempt still waiting after 15 s is lost.
  // Within the payments worker's longest activity (its shutdown grace is sized on that).
  startToCloseTimeout: '15 seconds',
  // As long as Stripe itself retries a delivery: past that, nobody would send it again either,
  // and the event is kept as unmatched instead of waiting on an API that is gone.
  scheduleToCloseTimeout: '3 days',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '10 minutes',
  },
  summary: "Fetch the thin event's object from Stripe's API",
});

const { deliverThinEvent } = proxyActivities<StripeApiActivities>({
  ...RetryPolicies.databaseStep,
  summary: 'Start what the event is (payment, refund, dispute), or keep it as unmatched',
});

// PINNED like every workflow here: a thin event's run finishes on the build that started it.

/**
 * Resolves one verified Stripe thin event: fetches its object through Stripe's API (the server
 * retries the fetch), then starts the payment, refund or dispute workflow it is, keyed by the
 * event's ID like a snapshot event's, or keeps it in the unmatched inbox. Workflow ID
 * `thin-<event id>`.
 */
export async function thinEventWorkflow(input: ThinEventWorkflowInput): Promise<ThinEventResult> {
  try {
    const fetched = await fetchThinEventObject(input);
    return await deliverThinEvent({ event: input, object: fetched.object });
  } catch (err) {
    if (!(err instanceof ActivityFailure) || err.activityType !== 'fetchThinEventObject') throw err;
    // Refused, or Stripe out of reach for days: nobody else will resolve it, so a person must.
    const cause = err.cause instanceof ApplicationFailure ? err.cause.message : err.message;
    return await deliverThinEvent({ event: input, unresolved: cause });
  }
}
