import { defineSignal } from '@temporalio/workflow';

/**
 * Work that waits too long (issue 27 point 3): a paid order not handed to the warehouse within
 * FULFILMENT_SLA_SECONDS, a payment workflow still running after PAYMENT_SLA_SECONDS. Each is a
 * cause of its own, alerted like a failure cause: opened at the first breach, resolved when a
 * later check finds none.
 */
export const SLA_CAUSES = ['FulfilmentSlaBreached', 'PaymentSlaBreached'] as const;
export type SlaCause = (typeof SLA_CAUSES)[number];

/** Defaults of FULFILMENT_SLA_SECONDS and PAYMENT_SLA_SECONDS. */
export const DEFAULT_SLA = { fulfilmentMs: 60 * 60_000, paymentMs: 5 * 60_000 };

/** What one check found for one cause. */
export interface SlaCheck {
  cause: SlaCause;
  /** When the check read, ISO 8601 (the activity's clock): orders the checks of a cause. */
  checkedAt: string;
  /** The threshold the check applied, in seconds. */
  slaSeconds: number;
  /** Breaching orders (or payment workflows), all of them. */
  count: number;
  /** Orders concerned, at most MAX_SLA_LISTED. */
  orderIds: number[];
  /** Workflow IDs of the breaching work, at most MAX_SLA_LISTED (for the Web UI link). */
  workflowIds: string[];
  /**
   * Partners an operator has paused while orders breach: the orders are held on purpose, but
   * still late for the merchant, so the alert says so instead of staying silent.
   */
  pausedPartners: string[];
}

/** Orders and workflow IDs an SLA alert lists; the rest are counted. */
export const MAX_SLA_LISTED = 20;

/** Workflow type of the per-cause SLA incident: its post children are alertWorkflows. */
export const SLA_INCIDENT_WORKFLOW_TYPE = 'slaIncidentWorkflow';

/** Workflow ID of the one incident workflow of an SLA cause. */
export function slaIncidentWorkflowId(cause: SlaCause): string {
  return `sla-incident-${cause}`;
}

/**
 * Workflow ID, and so Idempotency-Key, of one post of an SLA incident. The incident is named by
 * the check that opened it, so a later incident of the same cause never reuses a key.
 */
export function slaPostWorkflowId(
  cause: SlaCause,
  openedAt: string,
  post: 'opened' | 'resolved',
): string {
  return `${slaIncidentWorkflowId(cause)}-${openedAt}-${post}`;
}

/** Each check of a cause, sent to its incident workflow (signal-with-start while breached). */
export const slaCheckedSignal = defineSignal<[SlaCheck]>('slaChecked');

export interface SlaIncidentInput {
  cause: SlaCause;
  /** Carried across continue-as-new: the check that opened the incident (already posted). */
  opened?: SlaCheck;
}

/** The signature of slaIncidentWorkflow, for the activity's typed signal-with-start. */
export type SlaIncidentWorkflow = (input: SlaIncidentInput) => Promise<void>;

/** The ready command of an SLA alert: what lists the work that is not moving, and why. */
export function slaCommand(cause: SlaCause): string {
  return cause === 'FulfilmentSlaBreached'
    ? 'npm run ops -- stuck --type orderWorkflow'
    : 'npm run ops -- stuck --type paymentWorkflow';
}
