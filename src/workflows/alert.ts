import { ActivityFailure, isCancellation, log, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import type { AlertDelivery, Alert } from '../shared/alert';
import { RetryPolicies } from '../shared/retry-policies';

// Tries(25) + MaxExceptions(3), within an hour: the server schedules the attempts, the activity
// counts real failures across them and waits out rate limits (src/shared/retry-policies.ts).
const { deliverAlert } = proxyActivities<Activities>({
  ...RetryPolicies.alertDelivery,
  summary: 'Deliver the alert to the alert sink',
});

// A signal-with-start on the worker's own connection, like the hand-over to an order.
const { reportFailure } = proxyActivities<Activities>({
  ...RetryPolicies.temporalCall,
  summary: 'Report the failure to the digest of its cause',
});

/**
 * Raises one alert: one structured error log line, always, and then, for a failed run, a report
 * to the digest of its cause (./alert-digest.ts), which posts for the whole cause; for anything
 * else (a refund or return review, a dispute, a digest's own post), a delivery to the alert sink
 * under its own retry policy. Started as an abandoned child with a workflow ID derived from what
 * it reports, so there is exactly one per failed run, extra payment or digest post. Whoever
 * starts it does not wait for it (but a digest, which posts in order), so a sink that is down
 * never holds anything up. It never fails itself: an undeliverable alert stays in the log.
 */
export async function alertWorkflow(alert: Alert): Promise<AlertDelivery> {
  const headline = {
    refund_review: 'refund review needed',
    return_review: 'return review needed',
    dispute: 'dispute opened',
    workflow_failed: 'workflow failed',
    failures_opened: 'failures of a new cause',
    failures_digest: 'failures of a cause, digest',
    failures_resolved: 'failures of a cause resolved',
    sla_breached: 'SLA breached',
    sla_resolved: 'SLA breach resolved',
  }[alert.kind];
  log.error(headline, {
    alert: true,
    ...alert,
  });
  try {
    if (alert.kind === 'workflow_failed') {
      await reportFailure(alert);
      return { delivered: false, skipped: 'reported-to-digest' };
    }
    return await deliverAlert(alert);
  } catch (err) {
    if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
    log.error('alert could not be delivered to the sink; it stays in the log', {
      workflowId: alert.workflowId,
      runId: alert.runId,
      reason: err.cause?.message ?? err.message,
      retryState: err.retryState,
    });
    return { delivered: false };
  }
}
