import { msToNumber } from '@temporalio/common/lib/time';
import { NON_RETRYABLE_FAILURE_TYPES } from '../../src/shared/errors';
import {
  LOCAL_RETRY_THRESHOLD,
  retryDelayAfterAttempt,
  RetryPolicies,
  WAREHOUSE_BACKOFF_SECONDS,
} from '../../src/shared/retry-policies';

describe('retry presets', () => {
  it("pick the seed's Backoff wait by attempt, the last one repeating", () => {
    expect(
      [1, 2, 3, 4, 5].map((n) => retryDelayAfterAttempt(WAREHOUSE_BACKOFF_SECONDS, n)),
    ).toEqual([10, 30, 120, 120, 120]);
    // An attempt number the server never sends still gets the first wait, not nothing.
    expect(retryDelayAfterAttempt([10, 30], 0)).toBe(10);
    expect(retryDelayAfterAttempt([], 3)).toBe(0);
  });

  it('give every call a deadline longer than one attempt and the shared non-retryable types', () => {
    for (const [name, preset] of Object.entries(RetryPolicies)) {
      const attempt = msToNumber(preset.startToCloseTimeout);
      const deadline = msToNumber(preset.scheduleToCloseTimeout);
      expect({ name, longerThanAnAttempt: deadline > attempt }).toEqual({
        name,
        longerThanAnAttempt: true,
      });
      expect(preset.retry.nonRetryableErrorTypes).toEqual([...NON_RETRYABLE_FAILURE_TYPES]);
      expect(preset.retry.backoffCoefficient).toBeGreaterThan(1);
    }
  });

  it("keep the seed's NotifyWarehouse numbers: Tries(5), retryUntil(30 min), attempts that never overlap", () => {
    const warehouse = RetryPolicies.warehouseNotification;
    expect(warehouse.retry.maximumAttempts).toBe(5);
    expect(msToNumber(warehouse.scheduleToCloseTimeout)).toBe(30 * 60_000);
    expect(msToNumber(warehouse.startToCloseTimeout)).toBeLessThan(
      WAREHOUSE_BACKOFF_SECONDS[0]! * 1000,
    );
    expect(RetryPolicies.alertDelivery.retry.maximumAttempts).toBe(25);
  });

  it('keep short retries of local steps in the worker, and longer ones as durable timers', () => {
    // 1, 2, 4 and 8 s of databaseStep wait in the worker; 16 s and more become timers.
    expect(msToNumber(LOCAL_RETRY_THRESHOLD)).toBe(10_000);
    expect(WAREHOUSE_BACKOFF_SECONDS).toEqual([10, 30, 120]);
  });
});
