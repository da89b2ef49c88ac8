import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import type { AlertDeliveriesRepository } from '../db';
import { failureAlertWorkflowId, type AlertDelivery, type Alert } from '../shared/alert';
import { FailureType } from '../shared/errors';
import { ALERT_MAX_EXCEPTIONS, ALERT_RATE_LIMIT_FALLBACK_SECONDS } from '../shared/retry-policies';
import type { SlaCheck } from '../shared/sla';
import { parseRetryAfterMs } from './retry-after';
import { atCrashPoint } from './crash-points';
import { retryAfter } from './retry-by-cause';

export interface AlertActivityDeps {
  /** Slack-compatible incoming-webhook URL; undefined: alerts go to the log only. */
  alertWebhookUrl: string | undefined;
  temporalUiUrl: string | undefined;
  timeoutMs?: number;
  /** Stamps of accepted alerts: a retry after a crash past the sink's answer posts nothing. */
  deliveries?: AlertDeliveriesRepository;
  /** The failure digests' window and quiet period (ms); unset: DEFAULT_DIGEST_TIMING. */
  digestTiming?: { windowMs: number; quietMs: number };
  /** FULFILMENT_SLA_SECONDS and PAYMENT_SLA_SECONDS, in ms; unset: DEFAULT_SLA. */
  sla?: { fulfilmentMs: number; paymentMs: number };
}

export function webUiLink(
  uiUrl: string,
  alert: Pick<Alert, 'namespace' | 'workflowId' | 'runId'>,
): string {
  const base = uiUrl.replace(/\/+$/, '');
  const ns = encodeURIComponent(alert.namespace);
  return `${base}/namespaces/${ns}/workflows/${encodeURIComponent(alert.workflowId)}/${encodeURIComponent(alert.runId)}/history`;
}

/** The runs failed since the incident began (the cause is in no visibility field). */
export function failedSinceUiLink(uiUrl: string, namespace: string, since: string): string {
  const base = uiUrl.replace(/\/+$/, '');
  const query = `ExecutionStatus="Failed" AND CloseTime>="${since}"`;
  return `${base}/namespaces/${encodeURIComponent(namespace)}/workflows?query=${encodeURIComponent(query)}`;
}

/** The listed workflows by ID or, with none listed, the running ones of the cause's type. */
export function slaUiLink(uiUrl: string, namespace: string, sla: SlaCheck): string {
  const base = uiUrl.replace(/\/+$/, '');
  const query =
    sla.workflowIds.length > 0
      ? `WorkflowId IN (${sla.workflowIds.map((id) => `"${id.replace(/["\\]/g, '')}"`).join(', ')})`
      : `WorkflowType="${sla.cause === 'FulfilmentSlaBreached' ? 'orderWorkflow' : 'paymentWorkflow'}" AND ExecutionStatus="Running"`;
  return `${base}/namespaces/${encodeURIComponent(namespace)}/workflows?query=${encodeURIComponent(query)}`;
}

/** Slack reads `text` (<url|label> links); other receivers get every field under `alert`. */
export function alertPayload(alert: Alert, uiUrl: string | undefined) {
  const { digest, sla, command, ...fields } = alert;
  const link = !uiUrl
    ? null
    : digest
      ? failedSinceUiLink(uiUrl, alert.namespace, digest.since)
      : sla
        ? slaUiLink(uiUrl, alert.namespace, sla)
        : webUiLink(uiUrl, alert);
  const order = alert.orderId === null ? '' : ` (order ${alert.orderId})`;
  const attempts = alert.attempts === null ? '' : ` after ${alert.attempts} attempt(s)`;
  const failed = `${alert.workflowType} ${alert.workflowId}${order} failed${attempts}`;
  const headline = {
    refund_review: `:warning: refund review needed${order}, found by ${alert.workflowType} ${alert.workflowId}`,
    return_review: `:warning: return review needed${order}, found by ${alert.workflowType} ${alert.workflowId}`,
    dispute: `:warning: dispute opened${order}: gather evidence before its deadline`,
    workflow_failed: `:rotating_light: ${failed}`,
    failures_opened: `:rotating_light: ${digest?.cause}: ${failed}; further failures of this cause come as one digest`,
    failures_digest: `:rotating_light: ${digest?.cause}: ${digest?.failures} failures since ${digest?.since} (${digest?.newFailures} new), ${digest?.stillFailed} still failed`,
    failures_resolved:
      digest?.resolvedBy === 'retried'
        ? `:white_check_mark: ${digest.cause} resolved: all ${digest.failures} failed runs since ${digest.since} were retried`
        : `:white_check_mark: ${digest?.cause} resolved: no new failure for a while; ${digest?.failures} since ${digest?.since}, ${digest?.stillFailed} still failed`,
    sla_breached: `:hourglass: ${sla?.cause}: ${sla?.count} over the ${sla?.slaSeconds} s SLA${sla?.pausedPartners.length ? ` (paused: ${sla.pausedPartners.join(', ')})` : ''}`,
    sla_resolved: `:white_check_mark: ${sla?.cause} resolved: none over the ${sla?.slaSeconds} s SLA`,
  }[alert.kind];
  // The top failure is often only a wrapper ("Activity task failed"): the root cause says more.
  const rootCause =
    alert.rootCauseMessage !== null &&
    (alert.rootCauseType !== alert.failureType || alert.rootCauseMessage !== alert.failureMessage)
      ? `Cause: ${alert.rootCauseType ?? 'Error'}: ${alert.rootCauseMessage}`
      : undefined;
  const listed = digest ?? (sla && { orderIds: sla.orderIds, moreOrders: unlistedOf(sla) });
  const orders =
    listed && listed.orderIds.length > 0
      ? `Orders: ${listed.orderIds.join(', ')}${listed.moreOrders > 0 ? ` and ${listed.moreOrders} more` : ''}`
      : undefined;
  const text = [
    headline,
    `${alert.failureType ?? 'Failure'}: ${alert.failureMessage}`,
    rootCause,
    orders,
    command ? `Run: \`${command}\`` : undefined,
    link ? `<${link}|Open in Temporal Web UI>` : undefined,
  ]
    .filter((line) => line !== undefined)
    .join('\n');
  return {
    text,
    alert: {
      ...snakeCased(fields),
      web_ui_url: link,
      command: command ?? null,
      ...(digest && { digest: { ...snakeCased(digest), resolved_by: digest.resolvedBy ?? null } }),
      ...(sla && { sla: snakeCased(sla) }),
    },
  };
}

/** Receivers read the alert's fields under their snake_case names: `orderIds` is `order_ids`. */
function snakeCased(fields: object): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(fields).map(([key, value]) => [
      key.replace(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`),
      value,
    ]),
  );
}

export function createAlertActivities(deps: AlertActivityDeps) {
  const timeoutMs = deps.timeoutMs ?? 5_000;
  return {
    /**
     * The Idempotency-Key is the alert workflow's ID, which names what the alert reports, so a
     * deduplicating sink drops only a repeat. Slack does not deduplicate, so the delivery is
     * stamped right after the 2xx: only a crash between the two repeats the alert
     * (deliverAlert.post, after; docs/exactly-once.md).
     */
    async deliverAlert(alert: Alert): Promise<AlertDelivery> {
      const ctx = Context.current();
      if (!deps.alertWebhookUrl) {
        // Log-only mode: the line carries the link and command, which the workflow cannot know.
        const { text, alert: fields } = alertPayload(alert, deps.temporalUiUrl);
        ctx.log.error('alert (log only: ALERT_WEBHOOK_URL is unset)', { text, ...fields });
        return { delivered: false, skipped: 'no-sink-configured' };
      }
      // The alert workflow's ID names the delivery across attempts and to the sink.
      const key =
        ctx.info.workflowExecution?.workflowId ??
        failureAlertWorkflowId(alert.workflowId, alert.runId);
      if (await deps.deliveries?.wasDelivered(key)) {
        ctx.log.info('alert already delivered', { alertWorkflowId: key });
        return { delivered: true, skipped: 'already-delivered' };
      }
      // The seed's MaxExceptions: real failures are counted across attempts in the heartbeat
      // details, which the server hands to the next attempt; rate limits do not count.
      const { exceptions: before = 0 } = (ctx.info.heartbeatDetails ?? {}) as AlertDeliveryProgress;
      let delivery: AlertDelivery;
      try {
        delivery = await atCrashPoint('deliverAlert.post', () =>
          postAlert(alert, key, ctx.cancellationSignal),
        );
      } catch (err) {
        if (!(err instanceof ApplicationFailure) || err.nonRetryable) throw err;
        const attempt = ctx.info.attempt;
        if (err.type === FailureType.AlertSinkRateLimited) {
          const waitMs =
            (err.details?.[0] as { retryAfterMs?: number } | undefined)?.retryAfterMs ??
            ALERT_RATE_LIMIT_FALLBACK_SECONDS * 1000;
          ctx.heartbeat({ exceptions: before } satisfies AlertDeliveryProgress);
          throw retryAfter(err, waitMs, attempt, { benign: true });
        }
        const exceptions = before + 1;
        if (exceptions >= ALERT_MAX_EXCEPTIONS) {
          throw ApplicationFailure.create({
            type: FailureType.RetriesExhausted,
            message: `alert delivery gave up after ${exceptions} failures (MaxExceptions ${ALERT_MAX_EXCEPTIONS}) in ${attempt} attempt(s): ${err.message}`,
            details: [{ attempts: attempt, exceptions }],
            nonRetryable: true,
            cause: err,
          });
        }
        ctx.heartbeat({ exceptions } satisfies AlertDeliveryProgress);
        throw err;
      }
      // A crash before this stamp posts the alert again on retry: the one window left.
      await atCrashPoint('deliverAlert.stamp', async () => {
        await deps.deliveries?.markDelivered(key);
      });
      return delivery;
    },
  };

  async function postAlert(
    alert: Alert,
    idempotencyKey: string,
    cancelled: AbortSignal,
  ): Promise<AlertDelivery> {
    const timeout = AbortSignal.timeout(timeoutMs);
    let response: Response;
    try {
      response = await fetch(deps.alertWebhookUrl!, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'idempotency-key': idempotencyKey,
        },
        body: JSON.stringify(alertPayload(alert, deps.temporalUiUrl)),
        signal: AbortSignal.any([timeout, cancelled]),
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
      throw ApplicationFailure.create({
        type: FailureType.AlertSinkRateLimited,
        message: 'alert sink rate-limited the alert',
        details: [{ retryAfterMs: parseRetryAfterMs(response.headers.get('retry-after')) }],
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
  }
}

interface AlertDeliveryProgress {
  exceptions?: number;
}

/** Breaching orders an SLA post counts but does not list (a resolved post counts none). */
function unlistedOf(sla: SlaCheck): number {
  return Math.max(0, sla.count - sla.orderIds.length);
}
