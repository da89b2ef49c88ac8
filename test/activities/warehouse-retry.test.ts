import { MockActivityEnvironment } from '@temporalio/testing';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time';
import { createPaymentActivities } from '../../src/activities/payment-activities';
import { FailureType } from '../../src/shared/errors';

// What the warehouse activity tells the server after a failed attempt: the wait its cause calls
// for (nextRetryDelay), whether to retry at all, and whether the failure is an error.
function notifyWarehouseFailingWith(failure: Error) {
  const activities = createPaymentActivities({
    payments: undefined as never,
    orders: undefined as never,
    partnerPauses: { state: async () => ({ paused: false }) } as never,
    // The signal to the workflow fails here: best effort, the attempt's own failure is unchanged.
    client: {
      withDeadline: () => Promise.reject(new Error('Temporal unreachable')),
    } as never,
    warehouse: {
      requestShipment: () => Promise.reject(failure),
      cancelShipment: () => Promise.reject(new Error('not called here')),
    },
  });
  return (attempt: number) =>
    new MockActivityEnvironment({ attempt })
      .run((input: { orderId: number }) => activities.notifyWarehouse(input), { orderId: 12 })
      .then(
        () => {
          throw new Error('the activity should have failed');
        },
        (err: ApplicationFailure) => err,
      );
}

const delaySeconds = (f: ApplicationFailure) => msToNumber(f.nextRetryDelay ?? 0) / 1000;

describe('notifyWarehouse retry by cause', () => {
  it("waits the seed's Backoff after an outage: 10, 30, 120, then 120 s again", async () => {
    const attempt = notifyWarehouseFailingWith(
      ApplicationFailure.create({ type: FailureType.WarehouseUnavailable, message: '503' }),
    );
    const failures = await Promise.all([1, 2, 3, 4].map(attempt));
    expect(failures.map(delaySeconds)).toEqual([10, 30, 120, 120]);
    for (const f of failures) {
      expect(f.type).toBe(FailureType.WarehouseUnavailable);
      expect(f.nonRetryable).toBe(false);
      expect(f.category).toBeUndefined();
    }
    expect(failures[3]!.details?.[0]).toMatchObject({ attempts: 4 });
  });

  it('waits a 429 out as its Retry-After says, as a benign failure (no error log, no failure metric)', async () => {
    const failure = await notifyWarehouseFailingWith(
      ApplicationFailure.create({
        type: FailureType.WarehouseRateLimited,
        message: '429',
        details: [{ orderId: 12, status: 429, retryAfterMs: 45_000 }],
      }),
    )(2);
    expect(delaySeconds(failure)).toBe(45);
    expect(failure.category).toBe(ApplicationFailureCategory.BENIGN);
    expect(failure.details?.[0]).toMatchObject({ orderId: 12, status: 429, attempts: 2 });
  });

  it('waits 30 s after a 429 without a readable Retry-After', async () => {
    const failure = await notifyWarehouseFailingWith(
      ApplicationFailure.create({ type: FailureType.WarehouseRateLimited, message: '429' }),
    )(1);
    expect(delaySeconds(failure)).toBe(30);
  });

  it('passes a 4xx refusal on as non-retryable, and anything unexpected unchanged', async () => {
    const refusal = ApplicationFailure.create({
      type: FailureType.WarehouseRejected,
      message: '400',
      nonRetryable: true,
    });
    expect(await notifyWarehouseFailingWith(refusal)(1)).toBe(refusal);
    const bug = new TypeError('boom');
    expect(await notifyWarehouseFailingWith(bug)(1)).toBe(bug);
  });
});
