import { setTimeout as delay } from 'node:timers/promises';
import { temporal } from '@temporalio/proto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';

// A defect of Temporal's Java time-skipping test server (1.35.0, and sdk-java's main as of August
// 2026: TestWorkflowMutableStateImpl): when a child workflow closes, the server takes a
// time-skipping lock "unlocked by the parent" once the parent records the child's close. A parent
// that closed first (a child started with ParentClosePolicy ABANDON, as the order starts its
// invoice) gets NOT_FOUND, which the server swallows, and the lock is never released: from then
// on the server's clock only follows the wall clock, and an `env.sleep('30 minutes')` takes 30
// real minutes. Whether the invoice closes before or after its order is a race, so a test hung
// only on a loaded machine (docs/testing.md, "Flaky tests and their causes").
//
// The workaround: while a test waits on the server's clock (env.sleep, a workflow's result), the
// lock of every child that closed after its parent is released, once. Such a child is exactly a
// closed child whose closed parent's history holds no event of the child's close.

const WORKFLOW_STATUS = temporal.api.enums.v1.WorkflowExecutionStatus;

/** The closes that take the lock: completed, failed, cancelled, timed out (not terminated). */
const LOCKING_CLOSES = new Set<temporal.api.enums.v1.WorkflowExecutionStatus>([
  WORKFLOW_STATUS.WORKFLOW_EXECUTION_STATUS_COMPLETED,
  WORKFLOW_STATUS.WORKFLOW_EXECUTION_STATUS_FAILED,
  WORKFLOW_STATUS.WORKFLOW_EXECUTION_STATUS_CANCELED,
  WORKFLOW_STATUS.WORKFLOW_EXECUTION_STATUS_TIMED_OUT,
]);

/** How often a wait on the server's clock looks for a lock to release. */
const WATCH_INTERVAL_MS = 200;

/**
 * Makes `env.sleep` and the time-skipping client's `result` (and so `execute`) release the locks
 * the server leaks, while they wait. Call once, right after the environment is created.
 */
export function releaseLeakedChildLocks(env: TestWorkflowEnvironment): void {
  const settled = new Set<string>();
  // One look at a time, shared by concurrent waits: a lock is released once, not once per wait.
  let looking: Promise<void> | undefined;
  const release = () =>
    (looking ??= releaseOnce(env, settled)
      // A look that failed (the server busy, or being stopped) is simply made again.
      .catch(() => undefined)
      .finally(() => (looking = undefined)));
  const whileWaiting = async <T>(wait: Promise<T>): Promise<T> => {
    let waiting = true;
    const watch = (async () => {
      while (waiting) {
        await release();
        await delay(WATCH_INTERVAL_MS);
      }
    })();
    try {
      return await wait;
    } finally {
      waiting = false;
      await watch;
    }
  };

  const sleep = env.sleep;
  env.sleep = (duration) => whileWaiting(sleep(duration));
  const workflows = env.client.workflow;
  const result = workflows.result.bind(workflows);
  workflows.result = ((...args: Parameters<typeof result>) =>
    whileWaiting(result(...args))) as typeof workflows.result;
}

async function releaseOnce(env: TestWorkflowEnvironment, settled: Set<string>): Promise<void> {
  const { workflowService, testService } = env.connection;
  const namespace = env.namespace ?? 'default';
  const closed: temporal.api.workflow.v1.IWorkflowExecutionInfo[] = [];
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await workflowService.listClosedWorkflowExecutions({
      namespace,
      maximumPageSize: 1000,
      nextPageToken,
    });
    closed.push(...(page.executions ?? []));
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);

  const closedRuns = new Set(closed.map((info) => info.execution?.runId));
  for (const { execution, status } of closed) {
    const runId = execution?.runId;
    if (!runId || settled.has(runId)) continue;
    if (!LOCKING_CLOSES.has(status ?? WORKFLOW_STATUS.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED)) {
      settled.add(runId);
      continue;
    }
    // The server's listing leaves the parent out; its description names it.
    const described = await workflowService.describeWorkflowExecution({ namespace, execution });
    const parent = described.workflowExecutionInfo?.parentExecution;
    if (!parent?.runId) {
      settled.add(runId);
      continue;
    }
    // A parent still running records the child's close itself, and so releases the lock.
    if (!closedRuns.has(parent.runId)) continue;
    if (!(await parentRecordedClose(env, namespace, parent, runId))) {
      await testService!.unlockTimeSkipping({});
    }
    settled.add(runId);
  }
}

async function parentRecordedClose(
  env: TestWorkflowEnvironment,
  namespace: string,
  parent: temporal.api.common.v1.IWorkflowExecution,
  childRunId: string,
): Promise<boolean> {
  let nextPageToken: Uint8Array | undefined;
  do {
    const page = await env.connection.workflowService.getWorkflowExecutionHistory({
      namespace,
      execution: parent,
      nextPageToken,
    });
    for (const event of page.history?.events ?? []) {
      const closeOfChild =
        event.childWorkflowExecutionCompletedEventAttributes ??
        event.childWorkflowExecutionFailedEventAttributes ??
        event.childWorkflowExecutionCanceledEventAttributes ??
        event.childWorkflowExecutionTimedOutEventAttributes;
      if (closeOfChild?.workflowExecution?.runId === childRunId) return true;
    }
    nextPageToken = page.nextPageToken?.length ? page.nextPageToken : undefined;
  } while (nextPageToken);
  return false;
}
