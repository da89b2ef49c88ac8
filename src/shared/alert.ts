import { defineSignal, type WorkflowInfo } from '@temporalio/workflow';
import type { SlaCheck } from './sla';

/** Workflow type of the alert workflow: failures of this type raise no alert of their own. */
export const ALERT_WORKFLOW_TYPE = 'alertWorkflow';

/** Workflow type of the per-cause digest: its own failure would only report to itself. */
export const ALERT_DIGEST_WORKFLOW_TYPE = 'alertDigestWorkflow';

/** Longest cause kept in a digest's workflow ID (types are short; a hostile one is cut). */
const MAX_CAUSE_LENGTH = 100;

/** The root cause's type (else the failure's own), as `ops failed` and `--root-cause` name it. */
export function failureCause(alert: Pick<Alert, 'rootCauseType' | 'failureType'>): string {
  return (alert.rootCauseType ?? alert.failureType ?? 'Error').slice(0, MAX_CAUSE_LENGTH);
}

/** Workflow ID of the one digest of a cause: every failure of that cause signals it. */
export function alertDigestWorkflowId(cause: string): string {
  return `alert-digest-${cause}`;
}

/**
 * Workflow ID, and so Idempotency-Key, of one post of a digest's incident. The incident is named
 * by the run whose failure opened it, so a later incident of the same cause never reuses a key.
 */
export function digestPostWorkflowId(
  cause: string,
  incident: string,
  post: 'opened' | 'resolved' | { digest: number },
): string {
  const name = typeof post === 'string' ? post : `digest-${post.digest}`;
  return `${alertDigestWorkflowId(cause)}-${incident}-${name}`;
}

export function retryCommand(workflowId: string): string {
  return `npm run ops -- retry ${workflowId}`;
}

export function retryAllCommand(cause: string, since: string): string {
  return `npm run ops -- retry all --root-cause ${cause} --since ${since}`;
}

/** The signature of `alertDigestWorkflow`, for the typed signal-with-start of its activity. */
export type AlertDigestWorkflow = (input: AlertDigestInput) => Promise<void>;

export const failureReportedSignal = defineSignal<[Alert]>('failureReported');

export interface AlertDigestInput {
  cause: string;
  /** At most one digest post per window after the "opened" one; also how often it checks. */
  windowMs: number;
  /** No failure of the cause for this long resolves the incident. */
  quietMs: number;
  /** Carried across continue-as-new; absent on a fresh start. */
  state?: AlertDigestState;
}

/** One failed run the digest follows until it is retried (or deleted). */
export interface DigestedRun {
  workflowId: string;
  runId: string;
  orderId: number | null;
}

export interface AlertDigestState {
  /** The first failure, which names the incident and its posts. */
  first: Alert;
  /** Failures reported, repeats of one run not counted. */
  failures: number;
  /** `failures` when the last post went out. */
  posted: number;
  digests: number;
  lastFailureAt: number;
  /** The runs followed, up to MAX_DIGESTED_RUNS; later ones are counted only. */
  runs: DigestedRun[];
  /** Failures reported for runs beyond `runs`: they cannot be checked, so they never resolve. */
  untracked: number;
}

/** Defaults of ALERT_DIGEST_WINDOW_SECONDS and ALERT_DIGEST_QUIET_SECONDS. */
export const DEFAULT_DIGEST_TIMING = { windowMs: 5 * 60_000, quietMs: 30 * 60_000 };

/** Runs a digest follows for "resolved"; beyond them it counts, and resolves by quiet only. */
export const MAX_DIGESTED_RUNS = 1000;

export const MAX_LISTED_ORDERS = 20;

/** What a digest post adds to an alert: the incident so far and the one command to retry it. */
export interface FailureDigest {
  cause: string;
  /** Workflow time of the first failure, ISO 8601: the `--since` of the command. */
  since: string;
  failures: number;
  newFailures: number;
  orderIds: number[];
  moreOrders: number;
  /** Runs still failed at the last check; null before the first check. */
  stillFailed: number | null;
  /** Why a "resolved" post: the failed runs were retried (or deleted), or the cause went quiet. */
  resolvedBy?: 'retried' | 'quiet';
}

/** Workflow ID of the one alert for one failed run: Temporal refuses a second one. */
export function failureAlertWorkflowId(workflowId: string, runId: string): string {
  return `alert-${workflowId}-${runId}`;
}

export function refundReviewAlertWorkflowId(orderId: number, eventId: string): string {
  return `alert-refund-review-order-${orderId}-${eventId}`;
}

export function returnReviewAlertWorkflowId(orderId: number): string {
  return `alert-return-review-order-${orderId}`;
}

export function disputeAlertWorkflowId(disputeId: string): string {
  return `alert-dispute-${disputeId}`;
}

export type AlertKind =
  | 'workflow_failed'
  | 'refund_review'
  | 'return_review'
  | 'dispute'
  | FailureDigestKind
  | SlaAlertKind;

/** The posts of one SLA incident (src/workflows/sla.ts): breached at once, resolved when clear. */
export type SlaAlertKind = 'sla_breached' | 'sla_resolved';

/** The posts of one incident of a cause: opened at once, digests while it lasts, resolved. */
export type FailureDigestKind = 'failures_opened' | 'failures_digest' | 'failures_resolved';

export interface Alert extends Pick<
  WorkflowInfo,
  'namespace' | 'workflowType' | 'workflowId' | 'runId' | 'taskQueue'
> {
  kind: AlertKind;
  orderId: number | null;
  failureType: string | null;
  failureMessage: string;
  /** The innermost cause (e.g. the warehouse's 503 under FulfilmentFailed). */
  rootCauseType: string | null;
  rootCauseMessage: string | null;
  attempts: number | null;
  failedAt: string;
  command?: string;
  digest?: FailureDigest;
  sla?: SlaCheck;
}

export interface AlertDelivery {
  delivered: boolean;
  skipped?: 'no-sink-configured' | 'already-delivered' | 'reported-to-digest';
}
