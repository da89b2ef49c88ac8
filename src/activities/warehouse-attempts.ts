import { ApplicationFailure } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time';
import type { Context, Info } from '@temporalio/activity';
import type { PartnerPausesRepository } from '../db';
import { FailureType, type RateLimitDetails } from '../shared/errors';
import type { WarehouseAttemptFailed } from '../shared/order';
import { PARTNER_RELEASE_MAX_WAIT_MS, type PartnerRelease } from '../shared/partner';
import {
  retryDelayAfterAttempt,
  RetryPolicies,
  WAREHOUSE_BACKOFF_SECONDS,
  WAREHOUSE_RATE_LIMIT_FALLBACK_SECONDS,
} from '../shared/retry-policies';
import { failIfPartnerPaused } from './partner-activities';
import { retryAfter } from './retry-by-cause';

/**
 * A warehouse call held while an operator has the warehouse paused, released at the resume's
 * rate. An attempt the server starts while paused does not call, and a failure while paused is
 * the outage being held, not an attempt of the order's budget: the workflow calls again after
 * the resume. Any other failure goes to `onFailure`.
 */
export async function pausableWarehouseCall<T>(
  ctx: Context,
  pauses: PartnerPausesRepository,
  release: Partial<PartnerRelease>,
  call: () => Promise<T>,
  onFailure: (err: unknown) => Promise<never> | never,
): Promise<T> {
  try {
    await waitForReleaseSlot(ctx, release);
    await failIfPartnerPaused(pauses, 'warehouse');
    return await call();
  } catch (err) {
    if (err instanceof ApplicationFailure && err.type === FailureType.PartnerPaused) throw err;
    await failIfPartnerPaused(pauses, 'warehouse', err);
    return onFailure(err);
  }
}

/**
 * A call released from a pause at a rate keeps its slot to the millisecond; bounded, so a skewed
 * clock cannot hold the attempt past its start-to-close timeout.
 */
async function waitForReleaseSlot(ctx: Context, release: Partial<PartnerRelease>): Promise<void> {
  const early = Math.min((release.notBefore ?? 0) - Date.now(), PARTNER_RELEASE_MAX_WAIT_MS);
  if (early > 0) await ctx.sleep(early);
}

/**
 * What the workflow is told about a failed attempt the server will retry; undefined when it will
 * not (non-retryable, the last attempt, or the next one would start past the deadline): the
 * workflow then sees the failure itself.
 */
export function attemptToBeRetried(
  failure: unknown,
  info: Info,
): WarehouseAttemptFailed | undefined {
  if (!(failure instanceof ApplicationFailure) || failure.nonRetryable) return undefined;
  // The policy the server sends with the task; the test server sends none, and the workflow
  // schedules this activity with the warehouse preset.
  const maximumAttempts =
    info.retryPolicy?.maximumAttempts ?? RetryPolicies.warehouseNotification.retry.maximumAttempts;
  if (maximumAttempts > 0 && info.attempt >= maximumAttempts) return undefined;
  const nextRetryDelayMs = msToNumber(failure.nextRetryDelay ?? 0);
  const deadline = info.scheduleToCloseTimeoutMs
    ? info.scheduledTimestampMs + info.scheduleToCloseTimeoutMs
    : Infinity;
  if (Date.now() + nextRetryDelayMs >= deadline) return undefined;
  const first = (failure.details?.[0] ?? {}) as { status?: unknown; cause?: unknown };
  const lastFailure =
    typeof first.status === 'number'
      ? String(first.status)
      : typeof first.cause === 'string'
        ? first.cause
        : (failure.type ?? 'error');
  return { attempt: info.attempt, maximumAttempts, nextRetryDelayMs, lastFailure };
}

/** The warehouse's failure with the wait its cause calls for; anything else unchanged. */
export function warehouseRetry(err: unknown, attempt: number): unknown {
  if (!(err instanceof ApplicationFailure) || err.nonRetryable) return err;
  if (err.type === FailureType.WarehouseRateLimited) return rateLimitedRetry(err, attempt);
  return retryAfter(
    err,
    retryDelayAfterAttempt(WAREHOUSE_BACKOFF_SECONDS, attempt) * 1000,
    attempt,
  );
}

/** A 429 waits the partner's Retry-After, or the fallback when it gave none. */
export function rateLimitedRetry(err: ApplicationFailure, attempt: number): ApplicationFailure {
  const { retryAfterMs } = (err.details?.[0] ?? {}) as RateLimitDetails;
  return retryAfter(err, retryAfterMs ?? WAREHOUSE_RATE_LIMIT_FALLBACK_SECONDS * 1000, attempt, {
    benign: true,
  });
}
