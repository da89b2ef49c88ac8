import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import type { AlertDelivery, Alert } from '../shared/alert';
import { FailureType, type RateLimitDetails } from '../shared/errors';
import { parseRetryAfterMs } from './retry-after';

export interface AlertActivityDeps {
  /** Slack-compatible incoming-webhook URL; undefined: alerts go to the log only. */
  alertWebhookUrl: string | undefined;
  /** Base URL of the Temporal Web UI, for the link in the alert; undefined: no link. */
  temporalUiUrl: string | undefined;
  timeoutMs?: number;
}

/** Link to one run's history in the Temporal Web UI. */
export function webUiLink(
  uiUrl: string,
  alert: Pick<Alert, 'namespace' | 'workflowId' | 'runId'>,
): string {
  const base = uiUrl.replace(/\/+$/, '');
  const ns = encodeURIComponent(alert.namespace);
  return `${base}/namespaces/${ns}/workflows/${encodeURIComponent(alert.workflowId)}/${encodeURIComponent(alert.runId)}/history`;
}

/**
 * The JSON posted to the sink: Slack reads `text` (with a link in its <url|label> syntax); other
 * receivers get every field under `alert`.
 */
export function alertPayload(alert: Alert, uiUrl: string | undefined) {
  const link = uiUrl ? webUiLink(uiUrl, alert) : null;
  const order = alert.orderId === null ? '' : ` (order ${alert.orderId})`;
  const attempts = alert.attempts === null ? '' : ` after ${alert.attempts} attempt(s)`;
  const headline =
    alert.kind === 'refund_review'
      ? `:warning: refund review needed${order}, found by ${alert.workflowType} ${alert.workflowId}`
      : `:rotating_light: ${alert.workflowType} ${alert.workflowId}${order} failed${attempts}`;
  // The top failure is often only a wrapper ("ActivityFailure: Activity task failed"): the root
  // cause is what tells a person what went wrong, so it goes in the text when it differs.
  const rootCause =
    alert.rootCauseMessage !== null &&
    (alert.rootCauseType !== alert.failureType || alert.rootCauseMessage !== alert.failureMessage)
      ? `Cause: ${alert.rootCauseType ?? 'Error'}: ${alert.rootCauseMessage}`
      : undefined;
  const text = [
    headline,
    `${alert.failureType ?? 'Failure'}: ${alert.failureMessage}`,
    rootCause,
    link ? `<${link}|Open in Temporal Web UI>` : undefined,
  ]
    .filter((line) => line !== undefined)
    .join('\n');
  return {
    text,
    alert: {
      kind: alert.kind,
      namespace: alert.namespace,
      workflow_type: alert.workflowType,
      workflow_id: alert.workflowId,
      run_id: alert.runId,
      task_queue: alert.taskQueue,
      order_id: alert.orderId,
      failure_type: alert.failureType,
      failure_message: alert.failureMessage,
      root_cause_type: alert.rootCauseType,
      root_cause_message: alert.rootCauseMessage,
      attempts: alert.attempts,
      failed_at: alert.failedAt,
      web_ui_url: link,
    },
  };
}

/** Activities that deliver failure alerts (the seed's Queue::failing listener). */
export function createAlertActivities(deps: AlertActivityDeps) {
  const timeoutMs = deps.timeoutMs ?? 5_000;
  return {
    /**
     * POSTs one alert to the configured sink. The Idempotency-Key names the failed run, for
     * sinks that deduplicate; Slack does not, so a worker crash between the sink's 200 and the
     * activity's completion can still repeat an alert (the workflow ID guarantees one delivery
     * attempt sequence per failed run, not the sink's behaviour).
     */
    async deliverAlert(alert: Alert): Promise<AlertDelivery> {
      if (!deps.alertWebhookUrl) return { delivered: false, skipped: 'no-sink-configured' };
      const ctx = Context.current();
      const timeout = AbortSignal.timeout(timeoutMs);
      let response: Response;
      try {
        response = await fetch(deps.alertWebhookUrl, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            'idempotency-key': `alert-${alert.workflowId}-${alert.runId}`,
          },
          body: JSON.stringify(alertPayload(alert, deps.temporalUiUrl)),
          signal: AbortSignal.any([timeout, ctx.cancellationSignal]),
        });
      } catch (err) {
        throw ApplicationFailure.create({
          type: FailureType.AlertSinkUnavailable,
          message: timeout.aborted
            ? `alert sink did not answer within ${timeoutMs} ms`
            : `alert sink unreachable: ${err instanceof Error ? err.message : String(err)}`,
        });
      }
      await response.text().catch(() => '');
      if (response.ok) return { delivered: true };
      if (response.status === 429) {
        const details: RateLimitDetails = {
          retryAfterMs: parseRetryAfterMs(response.headers.get('retry-after')),
        };
        throw ApplicationFailure.create({
          type: FailureType.AlertSinkRateLimited,
          message: 'alert sink rate-limited the alert',
          details: [details],
        });
      }
      if (response.status >= 400 && response.status < 500 && response.status !== 408) {
        throw ApplicationFailure.create({
          type: FailureType.AlertSinkRejected,
          message: `alert sink rejected the alert with ${response.status}`,
          nonRetryable: true,
        });
      }
      throw ApplicationFailure.create({
        type: FailureType.AlertSinkUnavailable,
        message: `alert sink answered ${response.status}`,
      });
    },
  };
}
