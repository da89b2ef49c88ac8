import { ApplicationFailure, log } from '@temporalio/workflow';
import type { AlertDelivery, Alert } from '../shared/alert';
import { FailureType } from '../shared/errors';
import { RetryBudgets } from '../shared/retry-budget';
import { withRetryBudget } from './retry';

/**
 * Raises one alert: one structured error log line, always, and a delivery to the alert sink
 * under its own retry budget. Started as an abandoned child, by the failure interceptor for a
 * failed run or by the order workflow for a double charge, with a workflow ID derived from what
 * it reports, so there is exactly one per failed run or extra payment. Whoever starts it does
 * not wait for it, so a sink that is down never holds anything up. It never fails itself: an
 * undeliverable alert stays in the log.
 */
export async function alertWorkflow(alert: Alert): Promise<AlertDelivery> {
  log.error(alert.kind === 'refund_review' ? 'refund review needed' : 'workflow failed', {
    alert: true,
    ...alert,
  });
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
