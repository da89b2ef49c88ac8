// LEGACY: the decisions of the workflow-side retry loop (./retry-budget-loop.ts), kept to replay
// runs started before 2026-12-01; deleted with it.

/**
 * Retry budgets: the seed's #[Tries], #[Backoff], retryUntil() and #[MaxExceptions] as one
 * pure decision function. Workflows run it between attempts (see src/workflows/retry.ts), so
 * every wait is a durable timer and every attempt an activity of its own in the history.
 *
 * Why not only Temporal's RetryPolicy: exponential backoff cannot express a fixed list of
 * waits, a rate-limit wait must not count as a failure, and "three real exceptions" needs a
 * count that survives across attempts. The workflow keeps that count in its own state.
 */

export interface RetryBudget {
  /** Tries: attempts in all, rate-limited ones included. */
  maxAttempts: number;
  /** MaxExceptions: real failures (not rate limits) after which the call gives up. */
  maxExceptions?: number;
  /** Backoff: wait before attempt n+1 after attempt n failed; the last value repeats. */
  backoffMs: readonly number[];
  /** retryUntil: no attempt starts later than this long after the first one started. */
  deadlineMs?: number;
  /** Wait after a rate-limit answer that did not say how long to wait. */
  rateLimitFallbackMs: number;
}

/** How one attempt ended, as far as the budget is concerned. */
export type AttemptOutcome =
  | { kind: 'exception' }
  | { kind: 'rate_limited'; retryAfterMs?: number }
  | { kind: 'non_retryable' };

/** What has been spent so far; `startedAt` is the start of the first attempt (workflow time). */
export interface BudgetState {
  startedAt: number;
  attempts: number;
  exceptions: number;
}

export type GiveUpReason = 'non_retryable' | 'max_attempts' | 'max_exceptions' | 'deadline';

export type RetryDecision =
  | { action: 'retry'; waitMs: number; state: BudgetState }
  | { action: 'give_up'; reason: GiveUpReason; state: BudgetState };

export function startBudget(now: number): BudgetState {
  return { startedAt: now, attempts: 0, exceptions: 0 };
}

/** Decides what follows a failed attempt: wait and retry, or give up (and why). */
export function afterFailedAttempt(
  budget: RetryBudget,
  before: BudgetState,
  outcome: AttemptOutcome,
  now: number,
): RetryDecision {
  const state: BudgetState = {
    startedAt: before.startedAt,
    attempts: before.attempts + 1,
    exceptions: before.exceptions + (outcome.kind === 'rate_limited' ? 0 : 1),
  };
  if (outcome.kind === 'non_retryable')
    return { action: 'give_up', reason: 'non_retryable', state };
  if (budget.maxExceptions !== undefined && state.exceptions >= budget.maxExceptions) {
    return { action: 'give_up', reason: 'max_exceptions', state };
  }
  if (state.attempts >= budget.maxAttempts)
    return { action: 'give_up', reason: 'max_attempts', state };

  const waitMs =
    outcome.kind === 'rate_limited'
      ? (outcome.retryAfterMs ?? budget.rateLimitFallbackMs)
      : backoffAfter(budget, state.attempts);
  // An attempt that could only start after the deadline is not worth waiting for.
  if (budget.deadlineMs !== undefined && now + waitMs - state.startedAt > budget.deadlineMs) {
    return { action: 'give_up', reason: 'deadline', state };
  }
  return { action: 'retry', waitMs, state };
}

/** Wait after the n-th attempt (1-based): [10, 30, 120] gives 10, 30, 120, 120, … */
export function backoffAfter(budget: RetryBudget, attempt: number): number {
  const { backoffMs } = budget;
  if (backoffMs.length === 0) return 0;
  return backoffMs[Math.min(attempt, backoffMs.length) - 1] ?? 0;
}

const SECOND = 1000;
const MINUTE = 60 * SECOND;

/** Named budgets, one per kind of call. */
export const RetryBudgets = {
  /**
   * Warehouse notification: #[Tries(5)] + #[Backoff([10, 30, 120])] + retryUntil(30 minutes).
   * A 429 waits as long as its Retry-After says and uses one of the five tries, as a released
   * job does in Laravel.
   */
  warehouseNotification: {
    maxAttempts: 5,
    backoffMs: [10 * SECOND, 30 * SECOND, 120 * SECOND],
    deadlineMs: 30 * MINUTE,
    rateLimitFallbackMs: 30 * SECOND,
  },
  /**
   * Alert delivery to a chat webhook: #[Tries(25)] + #[MaxExceptions(3)]. Chat webhooks rate-limit
   * bursts of alerts, so many rate-limited tries are allowed; three real failures (the sink is
   * down or refuses us) end the delivery, the alert staying in the logs.
   */
  alertDelivery: {
    maxAttempts: 25,
    maxExceptions: 3,
    backoffMs: [5 * SECOND, 30 * SECOND, 60 * SECOND],
    deadlineMs: 60 * MINUTE,
    rateLimitFallbackMs: 10 * SECOND,
  },
} as const satisfies Record<string, RetryBudget>;
