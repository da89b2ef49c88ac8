import { ApplicationFailure, log } from '@temporalio/workflow';
import type { AlertDelivery, FailureAlert } from '../shared/alert';
import { FailureType } from '../shared/errors';
import { RetryBudgets } from '../shared/retry-budget';
import { withRetryBudget } from './retry';

/**
 * Raises the alert for one failed workflow run: one structured error log line, always, and a
 * delivery to the alert sink under its own retry budget. Started by the failure interceptor
 * with a workflow ID derived from the failed run, so there is exactly one per failed run; the
 * failed workflow does not wait for it (parent close policy ABANDON), so a sink that is down
 * never holds anything up. It never fails itself: an undeliverable alert stays in the log.
 */
export async function failureAlertWorkflow(alert: FailureAlert): Promise<AlertDelivery> {
  log.error('workflow failed', { alert: true, ...alert });
  try {
    // Chat webhooks answer in well under a second; 10 s means the sink is in trouble.
    return await withRetryBudget(
      'deliver-alert',
      RetryBudgets.alertDelivery,
      { startToCloseTimeout: '10 seconds' },
      'deliverAlert',
      alert,
    );
  } catch (err) {
    if (!(err instanceof ApplicationFailure) || err.type !== FailureType.RetriesExhausted)
      throw err;
    log.error('alert could not be delivered to the sink; it stays in the log', {
      workflowId: alert.workflowId,
      runId: alert.runId,
      reason: err.message,
    });
    return { delivered: false };
  }
}
