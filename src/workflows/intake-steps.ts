import type { Activities } from '../activities';
import { RetryPolicies } from '../shared/retry-policies';
import { localStep } from './local-step';

/**
 * The two steps of a provider event's intake (a payment, a refund, a dispute): record it once
 * (one database transaction), then hand it to its order's workflow (one signal-with-start on the
 * worker's own connection). Both take milliseconds, so they run as local activities
 * (./local-step.ts): in the worker, inside the workflow task, each recorded as a marker that
 * names its activity type. An event's intake is then one workflow task and no activity task.
 */
export function intakeSteps<R extends keyof Activities, H extends keyof Activities>(
  what: 'payment' | 'refund' | 'dispute',
  record: R,
  handOver: H,
): { record: Activities[R]; handOver: Activities[H] } {
  return {
    record: localStep(record, {
      ...RetryPolicies.databaseStep,
      summary: `Record the ${what} (once per provider event)`,
    }),
    handOver: localStep(handOver, {
      ...RetryPolicies.temporalCall,
      summary: `Hand the ${what} to the order's workflow`,
    }),
  };
}
