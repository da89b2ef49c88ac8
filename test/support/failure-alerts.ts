import type { Client } from '@temporalio/client';
import { ALERT_WORKFLOW_TYPE, failureAlertWorkflowId } from '../../src/shared/alert';

const RUN_ID_LENGTH = 36;

/**
 * The failure alerts raised for a workflow's failed runs: one alert workflow per failed run
 * (failureAlertWorkflowId), which reports it to the digest of its cause. The sink sees a post per
 * cause, not per run (alert-digest.test.ts), so "one alert per failed run" is counted here.
 */
export async function failureAlertWorkflows(client: Client, workflowId: string): Promise<string[]> {
  const prefix = failureAlertWorkflowId(workflowId, '');
  const ids: string[] = [];
  for await (const run of client.workflow.list({
    query: `WorkflowType = "${ALERT_WORKFLOW_TYPE}"`,
  })) {
    if (
      run.workflowId.startsWith(prefix) &&
      run.workflowId.length === prefix.length + RUN_ID_LENGTH
    )
      ids.push(run.workflowId);
  }
  return ids;
}
