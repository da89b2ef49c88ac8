import { log, startChild, workflowInfo } from '@temporalio/workflow';
import { ALERT_WORKFLOW_TYPE, type Alert } from '../shared/alert';
import type { alertWorkflow } from './alert';

/** What an alert about a fact this run met must say; the run itself is filled in. */
export type AlertFields = Pick<Alert, 'kind' | 'orderId' | 'failureType' | 'failureMessage'> &
  Partial<Alert>;

/**
 * Starts an alert (an abandoned child, ./alert.ts) about a fact this run met, once ever under its
 * workflow ID, which names the fact: a run that meets it again (a retried hand-over, a reset, a
 * repeated event) must not raise it a second time. Resolves whether this call started it.
 */
export async function raiseAlertOnce(workflowId: string, fields: AlertFields): Promise<boolean> {
  const info = workflowInfo();
  // The run that met the fact: the alert carries its Web UI link.
  const alert: Alert = {
    namespace: info.namespace,
    workflowType: info.workflowType,
    workflowId: info.workflowId,
    runId: info.runId,
    taskQueue: info.taskQueue,
    rootCauseType: null,
    rootCauseMessage: null,
    attempts: null,
    failedAt: new Date(Date.now()).toISOString(),
    ...fields,
  };
  try {
    await startChild<typeof alertWorkflow>(ALERT_WORKFLOW_TYPE, alertChild(workflowId, alert));
    return true;
  } catch (err) {
    // Already raised by an earlier run (for example after a reset): one alert is enough.
    log.warn('alert not started', {
      kind: alert.kind,
      orderId: alert.orderId,
      workflowId,
      error: String(err),
    });
    return false;
  }
}

/**
 * How every alert starts (here and ./alert.ts's incident posts): abandoned, so that a sink that is
 * down holds up no parent, and once per workflow ID, which names what the alert reports.
 */
export function alertChild(workflowId: string, alert: Alert) {
  return {
    workflowId,
    args: [alert] as [Alert],
    parentClosePolicy: 'ABANDON',
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
  } as const;
}
