import { Context } from '@temporalio/activity';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import {
  ALERT_DIGEST_WORKFLOW_TYPE,
  alertDigestWorkflowId,
  DEFAULT_DIGEST_TIMING,
  failureCause,
  failureReportedSignal,
  type Alert,
  type AlertDigestWorkflow,
  type DigestedRun,
} from '../shared/alert';
import { atCrashPoint } from './crash-points';

export interface AlertDigestActivityDeps {
  client: Client;
  timing?: { windowMs: number; quietMs: number };
}

/** Describes at once while a digest checks its runs: a few, so a storm's check is no storm. */
const DESCRIBE_CONCURRENCY = 8;

export function createAlertDigestActivities(deps: AlertDigestActivityDeps) {
  const timing = deps.timing ?? DEFAULT_DIGEST_TIMING;
  return {
    /** A retry after a crash signals again; the digest counts each run once. */
    async reportFailure(alert: Alert): Promise<{ digestWorkflowId: string }> {
      const cause = failureCause(alert);
      const workflowId = alertDigestWorkflowId(cause);
      await atCrashPoint('reportFailure.signal', () =>
        deps.client.workflow.signalWithStart<AlertDigestWorkflow, [Alert]>(
          ALERT_DIGEST_WORKFLOW_TYPE,
          {
            workflowId,
            // The failed run's own queue (`payments` or `heavy`): both workers register the
            // digest's activities and the alert delivery.
            taskQueue: Context.current().info.taskQueue,
            args: [{ cause, ...timing }],
            signal: failureReportedSignal,
            signalArgs: [alert],
          },
        ),
      );
      return { digestWorkflowId: workflowId };
    },

    /** Still failed: the latest run is Failed or is the reported run, still closing. */
    async stillFailedRuns(input: { runs: DigestedRun[] }): Promise<number> {
      let still = 0;
      const queue = [...input.runs];
      const worker = async () => {
        for (let run = queue.shift(); run; run = queue.shift()) {
          if (await isStillFailed(run)) still += 1;
        }
      };
      await Promise.all(Array.from({ length: DESCRIBE_CONCURRENCY }, worker));
      return still;
    },
  };

  async function isStillFailed(run: DigestedRun): Promise<boolean> {
    try {
      const latest = await deps.client.workflow.getHandle(run.workflowId).describe();
      if (latest.status.name === 'FAILED') return true;
      return latest.runId === run.runId && latest.status.name === 'RUNNING';
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    }
  }
}
