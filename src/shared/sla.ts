import { defineSignal } from '@temporalio/workflow';

// Work that waits too long (issue 27 point 3) is a cause of its own, alerted like a failure
// cause: opened at the first breach, resolved when a later check finds none.
export const SLA_CAUSES = ['FulfilmentSlaBreached', 'PaymentSlaBreached'] as const;
export type SlaCause = (typeof SLA_CAUSES)[number];

export const DEFAULT_SLA = { fulfilmentMs: 60 * 60_000, paymentMs: 5 * 60_000 };

export interface SlaCheck {
  cause: SlaCause;
  checkedAt: string;
  slaSeconds: number;
  count: number;
  orderIds: number[];
  workflowIds: string[];
  /** Paused partners: their orders are held on purpose but still late, so the alert says so. */
  pausedPartners: string[];
}

export const MAX_SLA_LISTED = 20;

/** Workflow type of the per-cause SLA incident: its post children are alertWorkflows. */
export const SLA_INCIDENT_WORKFLOW_TYPE = 'slaIncidentWorkflow';

export function slaIncidentWorkflowId(cause: SlaCause): string {
  return `sla-incident-${cause}`;
}

/** Named by the check that opened the incident, so a later incident never reuses a post's key. */
export function slaPostWorkflowId(
  cause: SlaCause,
  openedAt: string,
  post: 'opened' | 'resolved',
): string {
  return `${slaIncidentWorkflowId(cause)}-${openedAt}-${post}`;
}

export const slaCheckedSignal = defineSignal<[SlaCheck]>('slaChecked');

export interface SlaIncidentInput {
  cause: SlaCause;
  opened?: SlaCheck;
}

export type SlaIncidentWorkflow = (input: SlaIncidentInput) => Promise<void>;

export function slaCommand(cause: SlaCause): string {
  return cause === 'FulfilmentSlaBreached'
    ? 'npm run ops -- stuck --type orderWorkflow'
    : 'npm run ops -- stuck --type paymentWorkflow';
}
