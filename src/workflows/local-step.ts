import {
  ActivityFailure,
  ApplicationFailure,
  proxyLocalActivities,
  TimeoutFailure,
  TemporalFailure,
  type LocalActivityOptions,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { NON_RETRYABLE_FAILURE_TYPES } from '../shared/errors';
import { LOCAL_RETRY_THRESHOLD } from '../shared/retry-policies';

/**
 * Recorded as a marker naming its activity type; its preset applies, and waits longer than
 * LOCAL_RETRY_THRESHOLD become durable timers. A local activity's failure arrives bare (SDK
 * 1.24), so it is wrapped in an ActivityFailure as the server wraps an activity's: compensation,
 * `eventFailure`, the alert and `ops failed` see one failure chain whichever way the step ran.
 */
export function localStep<K extends keyof Activities>(
  activityType: K,
  options: LocalActivityOptions,
): Activities[K] {
  const run = proxyLocalActivities<Activities>({
    localRetryThreshold: LOCAL_RETRY_THRESHOLD,
    ...options,
  })[activityType] as (...args: unknown[]) => Promise<unknown>;
  const step = async (...args: unknown[]): Promise<unknown> => {
    try {
      return await run(...args);
    } catch (err) {
      throw asActivityFailure(activityType, err);
    }
  };
  return step as Activities[K];
}

/**
 * Several steps on one preset, each with its Web UI summary (metadata, not matched on replay):
 * `localSteps(RetryPolicies.databaseStep, { applyRefunds: 'Add up the refunds', ... })`.
 */
export function localSteps<K extends keyof Activities>(
  preset: LocalActivityOptions,
  summaries: Record<K, string>,
): Pick<Activities, K> {
  const steps: Partial<Pick<Activities, K>> = {};
  for (const activityType of Object.keys(summaries) as K[]) {
    steps[activityType] = localStep(activityType, { ...preset, summary: summaries[activityType] });
  }
  return steps as Pick<Activities, K>;
}

function asActivityFailure(activityType: string, err: unknown): unknown {
  // Cancellation and the SDK's own errors pass as they are.
  if (!(err instanceof TemporalFailure) || err instanceof ActivityFailure) return err;
  if (err.name === 'CancelledFailure') return err;
  return new ActivityFailure(
    'Local activity failed',
    activityType,
    undefined,
    retryState(err),
    'local activity',
    err,
  );
}

/** Why the SDK stopped retrying, as the server would say it for an activity. */
function retryState(err: TemporalFailure): ActivityFailure['retryState'] {
  if (err instanceof TimeoutFailure) return 'TIMEOUT';
  if (
    err instanceof ApplicationFailure &&
    (err.nonRetryable || NON_RETRYABLE_FAILURE_TYPES.some((t) => t === err.type))
  ) {
    return 'NON_RETRYABLE_FAILURE';
  }
  return 'MAXIMUM_ATTEMPTS_REACHED';
}
