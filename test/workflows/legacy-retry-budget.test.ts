import {
  afterFailedAttempt,
  backoffAfter,
  RetryBudgets,
  startBudget,
  type AttemptOutcome,
  type RetryBudget,
  type RetryDecision,
} from '../../src/workflows/legacy/retry-budget';

/** Plays a sequence of failed attempts through a budget, each attempt starting when told. */
function play(budget: RetryBudget, outcomes: AttemptOutcome[]) {
  let now = 0;
  let state = startBudget(now);
  const decisions: RetryDecision[] = [];
  for (const outcome of outcomes) {
    const decision = afterFailedAttempt(budget, state, outcome, now);
    decisions.push(decision);
    state = decision.state;
    if (decision.action === 'give_up') break;
    now += decision.waitMs;
  }
  return decisions;
}

const exception: AttemptOutcome = { kind: 'exception' };
const rateLimited = (retryAfterMs?: number): AttemptOutcome => ({
  kind: 'rate_limited',
  retryAfterMs,
});

describe('retry budgets', () => {
  it('expands a backoff list by attempt, repeating the last value', () => {
    const budget = RetryBudgets.warehouseNotification;
    expect([1, 2, 3, 4, 5].map((n) => backoffAfter(budget, n))).toEqual([
      10_000, 30_000, 120_000, 120_000, 120_000,
    ]);
  });

  it('Tries(5): gives up after the fifth failed attempt', () => {
    const decisions = play(
      RetryBudgets.warehouseNotification,
      Array<AttemptOutcome>(10).fill(exception),
    );
    expect(decisions.map((d) => (d.action === 'retry' ? d.waitMs : d.reason))).toEqual([
      10_000,
      30_000,
      120_000,
      120_000,
      'max_attempts',
    ]);
  });

  it('gives up at once on a non-retryable failure', () => {
    const [decision] = play(RetryBudgets.warehouseNotification, [{ kind: 'non_retryable' }]);
    expect(decision).toMatchObject({
      action: 'give_up',
      reason: 'non_retryable',
      state: { attempts: 1 },
    });
  });

  it('waits as long as a rate limit says, or the fallback when it says nothing', () => {
    const decisions = play(RetryBudgets.warehouseNotification, [
      rateLimited(45_000),
      rateLimited(undefined),
    ]);
    expect(decisions.map((d) => d.action === 'retry' && d.waitMs)).toEqual([45_000, 30_000]);
  });

  it('retryUntil: refuses an attempt that would start after the deadline, whatever tries remain', () => {
    const decisions = play(
      RetryBudgets.warehouseNotification,
      Array<AttemptOutcome>(5).fill(rateLimited(20 * 60_000)),
    );
    expect(decisions.map((d) => (d.action === 'retry' ? d.waitMs : d.reason))).toEqual([
      20 * 60_000,
      'deadline',
    ]);
  });

  it('MaxExceptions(3) with Tries(25): many rate-limited attempts are allowed, three real exceptions end it', () => {
    const budget = RetryBudgets.alertDelivery;
    const outcomes = [
      ...Array<AttemptOutcome>(15).fill(rateLimited(1_000)),
      exception,
      rateLimited(1_000),
      exception,
      exception,
    ];
    const decisions = play(budget, outcomes);
    const last = decisions.at(-1)!;
    expect(last).toMatchObject({
      action: 'give_up',
      reason: 'max_exceptions',
      state: { attempts: 19, exceptions: 3 },
    });
  });

  it('Tries(25) still bounds a call that is rate-limited forever', () => {
    const decisions = play(
      RetryBudgets.alertDelivery,
      Array<AttemptOutcome>(40).fill(rateLimited(1_000)),
    );
    expect(decisions).toHaveLength(25);
    expect(decisions.at(-1)).toMatchObject({
      action: 'give_up',
      reason: 'max_attempts',
      state: { exceptions: 0 },
    });
  });
});
