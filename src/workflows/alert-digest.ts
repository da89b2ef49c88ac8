import {
  continueAsNew,
  condition,
  proxyActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  digestPostWorkflowId,
  failureReportedSignal,
  MAX_DIGESTED_RUNS,
  MAX_LISTED_ORDERS,
  retryAllCommand,
  type Alert,
  type AlertDigestInput,
  type AlertDigestState,
  type FailureDigest,
  type FailureDigestKind,
} from '../shared/alert';
import { RetryPolicies } from '../shared/retry-policies';
import { raiseIncidentPost } from './alert';

// Up to MAX_DIGESTED_RUNS describes, a few at a time: a minute, not the 10 s of one call.
const { stillFailedRuns } = proxyActivities<Activities>({
  ...RetryPolicies.temporalCall,
  startToCloseTimeout: '1 minute',
  summary: "Count the incident's runs whose latest run is still Failed",
});

/** History events before a quiet tick hands the incident to a fresh run. */
const CONTINUE_AS_NEW_AFTER_EVENTS = 5_000;

/**
 * A storm of 500 failures is three posts: opened, digest, resolved. Each post's child workflow ID
 * (the Idempotency-Key) names cause, incident and post.
 */
export async function alertDigestWorkflow(input: AlertDigestInput): Promise<void> {
  const { cause, windowMs, quietMs } = input;
  let current: AlertDigestState | undefined = input.state;
  /** Failures reported while the current incident's "resolved" goes out: the next incident. */
  let next: AlertDigestState | undefined;
  let closing = false;
  const seen = new Set(current?.runs.map(runKey));

  setHandler(failureReportedSignal, (alert: Alert) => {
    if (closing) {
      next = report(next, alert, new Set(next?.runs.map(runKey)));
      return;
    }
    current = report(current, alert, seen);
  });

  for (;;) {
    await condition(() => current !== undefined);
    const incident = current!;
    if (incident.posted === 0) {
      incident.posted = incident.failures;
      await post(incident, 'failures_opened', 'opened', null);
    }
    for (;;) {
      await sleep(windowMs);
      const stillFailed = (await stillFailedRuns({ runs: incident.runs })) + incident.untracked;
      const resolvedBy =
        stillFailed === 0
          ? 'retried'
          : Date.now() - incident.lastFailureAt >= quietMs
            ? 'quiet'
            : undefined;
      if (resolvedBy) {
        closing = true;
        await post(incident, 'failures_resolved', 'resolved', stillFailed, resolvedBy);
        break;
      }
      if (incident.failures > incident.posted) {
        const newFailures = incident.failures - incident.posted;
        incident.posted = incident.failures;
        incident.digests += 1;
        await post(incident, 'failures_digest', { digest: incident.digests }, stillFailed, {
          newFailures,
        });
      }
      if (
        workflowInfo().continueAsNewSuggested ||
        workflowInfo().historyLength > CONTINUE_AS_NEW_AFTER_EVENTS
      ) {
        // Signals that arrive meanwhile make the server refuse this completion and replay the
        // task with them: none is lost.
        await continueAsNew<typeof alertDigestWorkflow>({ ...input, state: incident });
      }
    }
    // Failures that came while "resolved" went out open the next incident of this run.
    if (!next) return;
    current = next;
    next = undefined;
    closing = false;
    seen.clear();
    for (const run of current.runs) seen.add(runKey(run));
  }

  async function post(
    incident: AlertDigestState,
    kind: FailureDigestKind,
    name: Parameters<typeof digestPostWorkflowId>[2],
    stillFailed: number | null,
    extra: { newFailures?: number } | FailureDigest['resolvedBy'] = {},
  ): Promise<void> {
    const first = incident.first;
    const orders = [
      ...new Set(incident.runs.map((r) => r.orderId).filter((id): id is number => id !== null)),
    ];
    const digest: FailureDigest = {
      cause,
      since: first.failedAt,
      failures: incident.failures,
      newFailures: typeof extra === 'object' ? (extra.newFailures ?? 0) : 0,
      orderIds: orders.slice(0, MAX_LISTED_ORDERS),
      moreOrders: Math.max(0, orders.length - MAX_LISTED_ORDERS),
      stillFailed,
      ...(typeof extra === 'string' && { resolvedBy: extra }),
    };
    const alert: Alert = {
      ...first,
      kind,
      // The opened post is about its failed run's order; the others about the whole cause.
      orderId: kind === 'failures_opened' ? first.orderId : null,
      command: retryAllCommand(cause, first.failedAt),
      digest,
    };
    const workflowId = digestPostWorkflowId(cause, first.runId, name);
    await raiseIncidentPost(workflowId, alert, 'digest post');
  }
}

/** Counts one failed run into an incident (opening it), once however often it is reported. */
function report(
  incident: AlertDigestState | undefined,
  alert: Alert,
  seen: Set<string>,
): AlertDigestState {
  const run = { workflowId: alert.workflowId, runId: alert.runId, orderId: alert.orderId };
  const key = runKey(run);
  if (incident && seen.has(key)) return incident;
  const now = Date.now();
  const opened = incident ?? {
    first: alert,
    failures: 0,
    posted: 0,
    digests: 0,
    lastFailureAt: now,
    runs: [],
    untracked: 0,
  };
  opened.failures += 1;
  opened.lastFailureAt = now;
  if (opened.runs.length < MAX_DIGESTED_RUNS) {
    opened.runs.push(run);
    seen.add(key);
  } else {
    opened.untracked += 1;
  }
  return opened;
}

function runKey(run: { workflowId: string; runId: string }): string {
  return `${run.workflowId}/${run.runId}`;
}
