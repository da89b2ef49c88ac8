import { log, startChild, workflowInfo } from '@temporalio/workflow';
import { disputeAlertWorkflowId, type Alert } from '../shared/alert';
import type { DisputeEvent } from '../shared/payment-events';
import type { alertWorkflow } from './alert';

/** What became of one dispute event. */
export interface DisputeWorkflowResult {
  /** The dispute-opened alert was started by this run (false: raised before, or a closure). */
  alerted: boolean;
}

/**
 * Takes one dispute event (workflow ID `dispute-<event id>`). An opened dispute raises one alert
 * per dispute, with the evidence deadline, whatever number of events report it opened. A
 * closure (won, lost) is logged; recording it on the order is not done yet.
 */
export async function disputeWorkflow(event: DisputeEvent): Promise<DisputeWorkflowResult> {
  if (event.status !== 'opened') {
    log.info('dispute closed', { ...event });
    return { alerted: false };
  }
  const info = workflowInfo();
  const due = event.evidenceDueBy ? `, evidence due by ${event.evidenceDueBy}` : '';
  const alert: Alert = {
    kind: 'dispute',
    namespace: info.namespace,
    workflowType: info.workflowType,
    workflowId: info.workflowId,
    runId: info.runId,
    taskQueue: info.taskQueue,
    orderId: event.orderId ?? null,
    failureType: 'DisputeOpened',
    failureMessage: `payment ${event.paymentRef} is disputed (${event.disputeId}, amount ${event.amount}${event.reason ? `, ${event.reason}` : ''})${due}`,
    rootCauseType: null,
    rootCauseMessage: null,
    attempts: null,
    failedAt: new Date(Date.now()).toISOString(),
  };
  try {
    await startChild<typeof alertWorkflow>('alertWorkflow', {
      workflowId: disputeAlertWorkflowId(event.disputeId),
      args: [alert],
      parentClosePolicy: 'ABANDON',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    });
    return { alerted: true };
  } catch (err) {
    log.warn('dispute alert not started', { disputeId: event.disputeId, error: String(err) });
    return { alerted: false };
  }
}
