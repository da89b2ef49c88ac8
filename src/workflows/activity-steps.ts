import { proxyActivities, type ActivityOptions } from '@temporalio/workflow';
import type { Activities } from '../activities';

/**
 * The activities a workflow calls, one proxy each (at module scope, where this is called), each
 * with the retry preset of its kind of call (src/shared/retry-policies.ts says why each) and its
 * Web UI summary (metadata, not matched on replay):
 * `activitySteps({ deliverAlert: [RetryPolicies.alertDelivery, 'Deliver the alert'] })`.
 */
export function activitySteps<K extends keyof Activities>(table: {
  [T in K]: readonly [ActivityOptions, string];
}): Pick<Activities, K> {
  const steps: Partial<Pick<Activities, K>> = {};
  for (const activityType of Object.keys(table) as K[]) {
    const [preset, summary] = table[activityType];
    steps[activityType] = proxyActivities<Activities>({ ...preset, summary })[activityType];
  }
  return steps as Pick<Activities, K>;
}
