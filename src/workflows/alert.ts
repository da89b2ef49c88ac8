import { ActivityFailure, executeChild, isCancellation, log } from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { ALERT_WORKFLOW_TYPE, type AlertDelivery, type Alert } from '../shared/alert';
import { RetryPolicies } from '../shared/retry-policies';
import { activitySteps } from './activity-steps';
import { alertChild } from './raise-alert';

const { deliverAlert, reportFailure } = activitySteps({
  // Tries(25) + MaxExceptions(3), within an hour: the server schedules the attempts, the
  // activity counts real failures across them and waits out rate limits.
  deliverAlert: [RetryPolicies.alertDelivery, 'Deliver the alert to the alert sink'],
  // A signal-with-start on the worker's own connection, like the hand-over to an order.
  reportFailure: [RetryPolicies.temporalCall, 'Report the failure to the digest of its cause'],
});

/**
 * An abandoned child whose ID derives from what it reports: exactly one per failed run, extra
 * payment or post, and a sink that is down holds nothing up. It never fails.
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

/**
 * One post of an incident (a digest's or an SLA cause's) as an abandoned child: one per ID for as
 * long as the server remembers it, the delivery's stamp after that; a repeat is only logged.
 */
export async function raiseIncidentPost(workflowId: string, alert: Alert, what: string) {
  try {
    await executeChild<typeof alertWorkflow>(ALERT_WORKFLOW_TYPE, alertChild(workflowId, alert));
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    log.info(`${what} already raised`, { workflowId });
  }
}
