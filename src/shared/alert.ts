/** Workflow type of the alert workflow: failures of this type raise no alert of their own. */
export const ALERT_WORKFLOW_TYPE = 'alertWorkflow';

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
export type AlertKind = 'workflow_failed' | 'refund_review' | 'return_review' | 'dispute';

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
}

/** What became of an alert's delivery to the sink. */
export interface AlertDelivery {
  delivered: boolean;
  /** Why nothing was sent, when nothing was. */
  skipped?: 'no-sink-configured' | 'already-delivered';
}
