import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { retryAfter } from '../../src/activities/retry-by-cause';
import { FailureType } from '../../src/shared/errors';

// The failure an activity hands back with the wait its cause calls for: the server retries
// after exactly that wait, within the policy's attempts and deadline.
describe('retryAfter', () => {
  const cause = new Error('socket hang up');
  const failure = (details?: unknown[], nonRetryable = false) =>
    ApplicationFailure.create({
      type: FailureType.WarehouseUnavailable,
      message: 'warehouse answered 503',
      details,
      nonRetryable,
      cause,
    });

  it('keeps the type, message and cause, and asks for this wait', () => {
    const retried = retryAfter(failure([{ status: 503 }]), 45_000, 2);
    expect(retried).toBeInstanceOf(ApplicationFailure);
    expect(retried).toMatchObject({
      type: FailureType.WarehouseUnavailable,
      message: 'warehouse answered 503',
      nonRetryable: false,
      nextRetryDelay: 45_000,
      cause,
    });
    expect(retried.category).toBeUndefined();
  });

  it('is retryable even when the failure it wraps was not', () => {
    expect(retryAfter(failure([], true), 1_000, 1).nonRetryable).toBe(false);
  });

  it('marks a rate limit as benign when asked: being told to wait is not an error', () => {
    const retried = retryAfter(failure(), 1_000, 1, { benign: true });
    expect(retried.category).toBe(ApplicationFailureCategory.BENIGN);
  });

  it('adds the attempt to the first detail when that is an object, keeping the others', () => {
    const retried = retryAfter(failure([{ status: 503 }, 'second']), 1_000, 3);
    expect(retried.details).toEqual([{ status: 503, attempts: 3 }, 'second']);
  });

  it('gives a failure without details one, with the attempt', () => {
    expect(retryAfter(failure(), 1_000, 4).details).toEqual([{ attempts: 4 }]);
  });

  it.each([
    ['an array', [1, 2]],
    ['null', null],
    ['a string', 'raw body'],
  ])('keeps a first detail that is %s, after the attempt', (_name, first) => {
    const retried = retryAfter(failure([first, 'second']), 1_000, 5);
    expect(retried.details).toEqual([{ attempts: 5 }, first, 'second']);
  });
});
