import {
  ActivityFailure,
  ApplicationFailure,
  log,
  proxyActivities,
  sleep,
  type ActivityOptions,
} from '@temporalio/workflow';
import type { Activities } from '../../activities';
import {
  NON_RETRYABLE_FAILURE_TYPES,
  RATE_LIMITED_FAILURE_TYPES,
  FailureType,
  type RateLimitDetails,
} from '../../shared/errors';
import {
  afterFailedAttempt,
  startBudget,
  type AttemptOutcome,
  type GiveUpReason,
  type RetryBudget,
} from './retry-budget';

// LEGACY, kept only so that runs started before the patches 'warehouse-retry-policy' and
// 'alert-delivery-retry-policy' (2026-12-01) replay and finish: they retry in this workflow-side
// loop, one activity per attempt (`<step>#<n>`) with durable timers between. New runs let the
// server schedule the attempts (src/shared/retry-policies.ts). Order runs end within 30 minutes
// and alert runs within an hour, so once every run started before the deploy is closed (and
// the replay sets v1-v3, recorded with this loop, are retired), deprecate both patches and
// delete this folder. docs/deploys.md says how to check.

/** What a give-up failure carries in its details: enough to read the cause without the history. */
export interface RetriesExhaustedDetails {
  step: string;
  reason: GiveUpReason;
  attempts: number;
  exceptions: number;
  lastFailureType: string | undefined;
  lastFailureMessage: string;
}

/**
 * Runs one step (an activity) under a retry budget. Each attempt is a separate activity with
 * Temporal's own retries switched off (maximumAttempts: 1): the budget, not the server, decides
 * when to try again, and the waits are durable timers, so a worker crash in the middle of a
 * 120 s backoff loses nothing.
 *
 * Activity IDs are `<step>#<attempt>`: the Web UI shows the attempt number, and the operator
 * CLI finds attempt #1 of the failed step to retry the whole step with a fresh budget
 * (src/operator/retry.ts).
 */
export async function withRetryBudget<K extends keyof Activities>(
  step: string,
  budget: RetryBudget,
  options: ActivityOptions,
  activity: K,
  ...args: Parameters<Activities[K]>
): Promise<Awaited<ReturnType<Activities[K]>>> {
  let state = startBudget(Date.now());
  for (;;) {
    const attempt = state.attempts + 1;
    // A proxy per attempt: the activity ID and the UI summary carry the attempt number.
    const proxy = proxyActivities<Activities>({
      ...options,
      activityId: `${step}#${attempt}`,
      summary: `${step}, attempt ${attempt} of at most ${budget.maxAttempts}`,
      retry: { ...options.retry, maximumAttempts: 1 },
    });
    try {
      const call = proxy[activity] as unknown as (
        ...a: Parameters<Activities[K]>
      ) => Promise<Awaited<ReturnType<Activities[K]>>>;
      return await call(...args);
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      const decision = afterFailedAttempt(budget, state, classify(err), Date.now());
      state = decision.state;
      const cause = err.cause;
      if (decision.action === 'give_up') {
        const details: RetriesExhaustedDetails = {
          step,
          reason: decision.reason,
          attempts: state.attempts,
          exceptions: state.exceptions,
          lastFailureType:
            cause instanceof ApplicationFailure ? (cause.type ?? undefined) : cause?.name,
          lastFailureMessage: cause?.message ?? err.message,
        };
        throw ApplicationFailure.create({
          type: FailureType.RetriesExhausted,
          message: `${step} gave up (${decision.reason}) after ${state.attempts} attempt(s): ${details.lastFailureMessage}`,
          details: [details],
          nonRetryable: true,
          cause: err,
        });
      }
      log.warn('attempt failed; retrying', {
        step,
        attempt,
        waitMs: decision.waitMs,
        failure: cause?.message ?? err.message,
      });
      await sleep(decision.waitMs);
    }
  }
}

/** Reads the activity's failure type to tell the budget how to count the attempt. */
function classify(err: ActivityFailure): AttemptOutcome {
  const cause = err.cause;
  if (!(cause instanceof ApplicationFailure)) return { kind: 'exception' }; // timeouts, cancellations
  const type = cause.type ?? '';
  if (cause.nonRetryable || (NON_RETRYABLE_FAILURE_TYPES as readonly string[]).includes(type)) {
    return { kind: 'non_retryable' };
  }
  if ((RATE_LIMITED_FAILURE_TYPES as readonly string[]).includes(type)) {
    const details = cause.details?.[0] as RateLimitDetails | undefined;
    return { kind: 'rate_limited', retryAfterMs: details?.retryAfterMs };
  }
  return { kind: 'exception' };
}
