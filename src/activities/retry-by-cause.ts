import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';

/**
 * The failure of one attempt, handed back to the Temporal server with the wait it calls for:
 * `nextRetryDelay` overrides the policy's backoff for this one retry, while the policy's
 * `maximumAttempts` and the schedule-to-close deadline still decide whether there is one. A
 * rate-limit answer is `BENIGN`: the SDK logs it at debug level and counts no failure metric,
 * since being asked to wait is not an error. The attempt number goes into the details, so an
 * alert or a person reading the failure sees how far the step got: merged into the first detail
 * when that is an object (the workflows read it there), put in front of the others otherwise.
 */
export function retryAfter(
  failure: ApplicationFailure,
  delayMs: number,
  attempt: number,
  options: { benign?: boolean } = {},
): ApplicationFailure {
  const details = failure.details ?? [];
  const [first, ...rest] = details;
  return ApplicationFailure.create({
    type: failure.type ?? undefined,
    message: failure.message,
    details: isObject(first)
      ? [{ ...first, attempts: attempt }, ...rest]
      : [{ attempts: attempt }, ...details],
    nonRetryable: false,
    nextRetryDelay: delayMs,
    category: options.benign ? ApplicationFailureCategory.BENIGN : undefined,
    cause: failure.cause,
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
