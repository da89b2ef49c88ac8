import { defineSignal } from '@temporalio/workflow';
import type { SlaCheck } from './sla';

/** Workflow type of the alert workflow: failures of this type raise no alert of their own. */
export const ALERT_WORKFLOW_TYPE = 'alertWorkflow';

/** Workflow type of the per-cause digest: its own failure would only report to itself. */
export const ALERT_DIGEST_WORKFLOW_TYPE = 'alertDigestWorkflow';

/** Longest cause kept in a digest's workflow ID (types are short; a hostile one is cut). */
const MAX_CAUSE_LENGTH = 100;

/**
 * The cause a failure is digested under: the root cause's type, as `npm run ops -- failed` shows
 * it under ROOT CAUSE and `retry all --root-cause` matches it (the failure's own type when it
 * has no cause).
 */
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

/** The command that retries one failed workflow. */
export function retryCommand(workflowId: string): string {
  return `npm run ops -- retry ${workflowId}`;
}

/** The command that retries every failure of a cause since an incident began. */
export function retryAllCommand(cause: string, since: string): string {
  return `npm run ops -- retry all --root-cause ${cause} --since ${since}`;
}

/** The signature of `alertDigestWorkflow`, for the typed signal-with-start of its activity. */
export type AlertDigestWorkflow = (input: AlertDigestInput) => Promise<void>;

/** One failed run, as its alert workflow reports it to the digest of its cause. */
export const failureReportedSignal = defineSignal<[Alert]>('failureReported');

/** What the digest's start carries: its cause and its timing, from the workers' config. */
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

/** An open incident: what continue-as-new hands to the next run. */
export interface AlertDigestState {
  /** The first failure, which names the incident and its posts. */
  first: Alert;
  /** Failures reported, repeats of one run not counted. */
  failures: number;
  /** `failures` when the last post went out. */
  posted: number;
  /** Digest posts sent so far (they number the next one). */
  digests: number;
  /** Workflow time of the last failure reported (ms). */
  lastFailureAt: number;
  /** The runs followed, up to MAX_DIGESTED_RUNS; later ones are counted only. */
  runs: DigestedRun[];
  /** Failures reported for runs beyond `runs`: they cannot be checked, so they never resolve. */
  untracked: number;
}

/**
 * A digest's timing unless configured (ALERT_DIGEST_WINDOW_SECONDS, ALERT_DIGEST_QUIET_SECONDS):
 * a digest post at most every 5 minutes, resolved after 30 minutes without a failure.
 */
export const DEFAULT_DIGEST_TIMING = { windowMs: 5 * 60_000, quietMs: 30 * 60_000 };

/** Runs a digest follows for "resolved"; beyond them it counts, and resolves by quiet only. */
export const MAX_DIGESTED_RUNS = 1000;

/** Order IDs a post lists; the rest are counted ("and 480 more"). */
export const MAX_LISTED_ORDERS = 20;

/** What a digest post adds to an alert: the incident so far and the one command to retry it. */
export interface FailureDigest {
  cause: string;
  /** Workflow time of the first failure, ISO 8601: the `--since` of the command. */
  since: string;
  failures: number;
  /** Failures since the previous post. */
  newFailures: number;
  /** Affected orders, at most MAX_LISTED_ORDERS of them. */
  orderIds: number[];
  /** Affected orders not listed. */
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

/** Workflow ID of the one refund-review alert for one extra payment of an order. */
export function refundReviewAlertWorkflowId(orderId: number, eventId: string): string {
  return `alert-refund-review-order-${orderId}-${eventId}`;
}

/** Workflow ID of the one return-review alert of an order refunded in full after shipment. */
export function returnReviewAlertWorkflowId(orderId: number): string {
  return `alert-return-review-order-${orderId}`;
}

/** Workflow ID of the one alert for an opened dispute. */
export function disputeAlertWorkflowId(disputeId: string): string {
  return `alert-dispute-${disputeId}`;
}

/**
 * A workflow ended Failed; a dispute was opened; a double charge needs a person to review a refund; or an order
 * refunded in full after the warehouse took it needs a person to review a return.
 */
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

/** Everything an on-call person needs to see about one failed run or one double charge. */
export interface Alert {
  kind: AlertKind;
  namespace: string;
  workflowType: string;
  workflowId: string;
  runId: string;
  taskQueue: string;
  orderId: number | null;
  failureType: string | null;
  failureMessage: string;
  /** The innermost cause (e.g. the warehouse's 503 under FulfilmentFailed). */
  rootCauseType: string | null;
  rootCauseMessage: string | null;
  /** Attempts of the step that failed, when the failure says so. */
  attempts: number | null;
  /** Workflow time of the failure, ISO 8601. */
  failedAt: string;
  /** The ready command that deals with it, when there is one. */
  command?: string;
  /** Set on the posts of a cause's digest. */
  digest?: FailureDigest;
  /** Set on the posts of an SLA incident: the check the post reports. */
  sla?: SlaCheck;
}

/** What became of an alert's delivery to the sink. */
export interface AlertDelivery {
  delivered: boolean;
  /** Why nothing was sent, when nothing was. */
  skipped?: 'no-sink-configured' | 'already-delivered' | 'reported-to-digest';
}
