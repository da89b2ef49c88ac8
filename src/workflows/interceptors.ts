import {
  ActivityFailure,
  ApplicationFailure,
  ChildWorkflowFailure,
  isCancellation,
  log,
  startChild,
  TemporalFailure,
  workflowInfo,
  type Next,
  type WorkflowExecuteInput,
  type WorkflowInboundCallsInterceptor,
  type WorkflowInterceptorsFactory,
} from '@temporalio/workflow';
import {
  ALERT_DIGEST_WORKFLOW_TYPE,
  ALERT_WORKFLOW_TYPE,
  failureAlertWorkflowId,
  retryCommand,
  type Alert,
} from '../shared/alert';
import type { alertWorkflow } from './alert';

/** The alert machinery itself: its failure would alert about alerting, or report to itself. */
const ALERTING_TYPES = new Set([ALERT_WORKFLOW_TYPE, ALERT_DIGEST_WORKFLOW_TYPE]);

/**
 * The seed's Queue::failing: the alert starts before a workflow ends Failed. A plain Error retries
 * the workflow task and a cancellation ends it Cancelled, so neither raises an alert.
 */
class FailureAlertInterceptor implements WorkflowInboundCallsInterceptor {
  async execute(
    input: WorkflowExecuteInput,
    next: Next<WorkflowInboundCallsInterceptor, 'execute'>,
  ): Promise<unknown> {
    try {
      return await next(input);
    } catch (err) {
      if (
        err instanceof TemporalFailure &&
        !isCancellation(err) &&
        !ALERTING_TYPES.has(workflowInfo().workflowType)
      ) {
        await raiseAlert(describeFailure(err, input.args));
      }
      throw err;
    }
  }
}

async function raiseAlert(alert: Alert): Promise<void> {
  try {
    await startChild<typeof alertWorkflow>(ALERT_WORKFLOW_TYPE, {
      workflowId: failureAlertWorkflowId(alert.workflowId, alert.runId),
      args: [alert],
      // The failed workflow closes at once; its alert lives on and retries on its own.
      parentClosePolicy: 'ABANDON',
    });
  } catch (err) {
    // Raising the alert must never hide the failure being alerted on.
    log.error('could not start the failure alert workflow', { error: String(err), ...alert });
  }
}

function describeFailure(err: TemporalFailure, args: unknown[]): Alert {
  const info = workflowInfo();
  let root: Error = err;
  let attempts: number | null = null;
  for (
    let current: Error | undefined = err;
    current;
    current = current.cause as Error | undefined
  ) {
    root = current;
    if (attempts === null && current instanceof ApplicationFailure)
      attempts = attemptsFrom(current.details);
  }
  return {
    kind: 'workflow_failed',
    namespace: info.namespace,
    workflowType: info.workflowType,
    workflowId: info.workflowId,
    runId: info.runId,
    taskQueue: info.taskQueue,
    orderId: orderIdFrom(args),
    failureType: failureTypeOf(err),
    failureMessage: err.message,
    rootCauseType: root === err ? null : failureTypeOf(root),
    rootCauseMessage: root === err ? null : root.message,
    attempts,
    failedAt: new Date(Date.now()).toISOString(),
    command: retryCommand(info.workflowId),
  };
}

function failureTypeOf(err: Error): string | null {
  if (err instanceof ApplicationFailure) return err.type ?? null;
  if (err instanceof ActivityFailure) return `ActivityFailure(${err.activityType})`;
  if (err instanceof ChildWorkflowFailure)
    return `ChildWorkflowFailure(${err.execution.workflowId})`;
  return err.name;
}

function attemptsFrom(details: unknown[] | undefined | null): number | null {
  const first = details?.[0] as { attempts?: unknown } | undefined;
  return typeof first?.attempts === 'number' ? first.attempts : null;
}

/** Workflows take one object argument; by convention the order it concerns is `orderId`. */
function orderIdFrom(args: unknown[]): number | null {
  const first = args[0] as { orderId?: unknown } | undefined;
  return typeof first?.orderId === 'number' ? first.orderId : null;
}

export const interceptors: WorkflowInterceptorsFactory = () => ({
  inbound: [new FailureAlertInterceptor()],
});
