import { ApplicationFailure } from '@temporalio/common';

/**
 * Activities of the test-only workflows in ./workflows.ts: a step that fails until told
 * otherwise, and a compensation that always fails. They count their calls, so a test can tell
 * which steps a retry ran again.
 */
export function createStepActivities() {
  const calls = { prepare: 0, charge: 0, refund: 0 };
  const state = { chargeFails: true };
  const activities = {
    async prepare(): Promise<void> {
      calls.prepare += 1;
    },
    async charge(): Promise<string> {
      calls.charge += 1;
      if (state.chargeFails) {
        throw ApplicationFailure.create({
          type: 'CardDeclined',
          message: 'card declined',
          nonRetryable: true,
        });
      }
      return 'charged';
    },
    async refund(): Promise<void> {
      calls.refund += 1;
      throw ApplicationFailure.create({
        type: 'RefundFailed',
        message: 'refund failed',
        nonRetryable: true,
      });
    },
  };
  return { calls, state, activities };
}

export type StepActivities = ReturnType<typeof createStepActivities>['activities'];
