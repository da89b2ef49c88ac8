import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { causeChain } from './failures';
import {
  describeLatestRun,
  type HistoryEvent,
  type LatestRun,
  runsByWorkflowId,
  type UndecodablePayloads,
} from './visibility';

/** Where a failed run is reset to, and why there. */
export interface ResetPoint {
  /** The WorkflowTaskCompleted event to reset to (workflowTaskFinishEventId). */
  eventId: NonNullable<HistoryEvent['eventId']>;
  /**
   * `activity`: the activity whose failure failed the workflow is scheduled again, everything
   * recorded before it (recordPayment's result) is kept. `start`: the workflow code itself
   * failed, no activity to point at; the run starts over from its first workflow task.
   */
  kind: 'activity' | 'start';
  /** The activity that is run again, for `activity`. */
  activityType?: string;
}

/** The workflow is not in a state that retry may touch; nothing was changed. */
export class RetryRefusedError extends Error {
  constructor(
    readonly workflowId: string,
    /** Status of the latest run, e.g. COMPLETED; undefined when the server does not know the ID. */
    readonly status: string | undefined,
  ) {
    super(
      status === undefined
        ? `${workflowId}: no such workflow`
        : `${workflowId}: its latest run is ${status}; only a workflow whose latest run FAILED can be retried`,
    );
    this.name = 'RetryRefusedError';
  }
}

/** A failed run could not be reset because its history does not show where it failed. */
export class NoResetPointError extends Error {
  constructor(readonly workflowId: string) {
    super(`${workflowId}: its history has no completed workflow task to reset to`);
    this.name = 'NoResetPointError';
  }
}

/**
 * Finds the reset point of a failed run from its history. The failure that closed the workflow
 * is followed down its cause chain to the first activity failure; the activity's Scheduled event
 * names the workflow task that scheduled it, and resetting to that task runs the workflow again
 * from the step that failed. The chain, not "the last activity that failed", decides: steps
 * that run after the failure (compensation, alerts) are not what should be retried.
 *
 * The server retries an activity within one Scheduled event, so the reset runs it again with a
 * fresh retry policy: all its attempts, its whole deadline.
 * Returns undefined when the history has nothing to reset to.
 */
export function findResetPoint(events: readonly HistoryEvent[]): ResetPoint | undefined {
  const failed = events.filter((e) => e.workflowExecutionFailedEventAttributes).at(-1);
  const failure = failed?.workflowExecutionFailedEventAttributes?.failure;
  const activityFailure = causeChain(failure).find((f) => f.activityFailureInfo);
  const scheduledEventId = activityFailure?.activityFailureInfo?.scheduledEventId;
  const scheduledIndex = scheduledEventId
    ? events.findIndex((e) => sameId(e.eventId, scheduledEventId))
    : -1;
  const scheduled = scheduledIndex >= 0 ? events[scheduledIndex] : undefined;
  const attributes = scheduled?.activityTaskScheduledEventAttributes;
  if (attributes?.workflowTaskCompletedEventId) {
    return {
      eventId: attributes.workflowTaskCompletedEventId,
      kind: 'activity',
      activityType: attributes.activityType?.name ?? undefined,
    };
  }
  // No activity in the chain (the workflow code failed by itself), or a local activity, which has
  // no Scheduled event: start over from the first workflow task.
  const first = events.find((e) => e.workflowTaskCompletedEventAttributes);
  return first?.eventId ? { eventId: first.eventId, kind: 'start' } : undefined;
}

function sameId(a: { toString(): string } | null | undefined, b: { toString(): string }): boolean {
  return a !== null && a !== undefined && a.toString() === b.toString();
}

export interface RetryOptions {
  /** Recorded on the reset, shown in the Web UI: e.g. "ops retry by alice". */
  reason: string;
  /** Client identity recorded with the reset. */
  identity?: string;
}

export interface RetryResult {
  workflowId: string;
  failedRunId: string;
  newRunId: string;
  resetPoint: ResetPoint;
}

/**
 * Re-runs a failed workflow with the same input by resetting its failed run (not by starting a
 * fresh one). The new run keeps the workflow ID, the input and every result recorded before the
 * reset point: the payment workflow replays recordPayment's `created: true` and goes on to notify
 * the warehouse, which a fresh run (finding the payment already recorded) would never do.
 * Refuses (RetryRefusedError) unless the latest run is Failed, so a completed workflow is never
 * run twice.
 */
export async function retryFailedWorkflow(
  client: Client,
  workflowId: string,
  options: RetryOptions,
): Promise<RetryResult> {
  const latest = await describeLatestRun(client, workflowId);
  if (latest?.status.name !== 'FAILED')
    throw new RetryRefusedError(workflowId, latest?.status.name);
  return resetFailedRun(client, latest, options);
}

async function resetFailedRun(
  client: Client,
  latest: LatestRun,
  options: RetryOptions,
): Promise<RetryResult> {
  const { workflowId, runId } = latest;
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  const resetPoint = findResetPoint(history.events ?? []);
  if (!resetPoint) throw new NoResetPointError(workflowId);
  const response = await client.workflowService.resetWorkflowExecution({
    namespace: client.options.namespace,
    // The run whose history gave the reset point: event IDs only mean something within one run.
    workflowExecution: { workflowId, runId },
    workflowTaskFinishEventId: resetPoint.eventId,
    reason: options.reason,
    // Fresh per call: a deliberate second retry is a second reset, never merged into the first.
    requestId: randomUUID(),
    identity: options.identity ?? client.options.identity,
  });
  return { workflowId, failedRunId: runId, newRunId: response.runId, resetPoint };
}

export type RetryAllOutcome = (
  | { workflowId: string; kind: 'retried'; result: RetryResult }
  /** Visibility still shows an old Failed run, but the workflow is now something else. */
  | { workflowId: string; kind: 'skipped'; status: string }
  | { workflowId: string; kind: 'error'; error: Error }
) & {
  /**
   * Its memo cannot be decoded with the configured key(s). A reset needs no payloads, so the
   * retry goes ahead; the operator is told, since its workers may lack the key as well.
   */
  undecodable?: { type: string } & UndecodablePayloads;
};

/**
 * Retries every workflow (optionally of one type) whose latest run is Failed, one at a time.
 * IDs that visibility lists with a Failed run but whose latest run is not Failed (retried
 * already, completed, running) are skipped and reported. One workflow's error does not stop the
 * others.
 */
export async function retryAllFailed(
  client: Client,
  options: RetryOptions & { workflowType?: string },
): Promise<RetryAllOutcome[]> {
  const outcomes: RetryAllOutcome[] = [];
  for (const workflowId of (
    await runsByWorkflowId(client, 'Failed', options.workflowType)
  ).keys()) {
    try {
      const latest = await describeLatestRun(client, workflowId);
      const undecodable = latest?.undecodable && {
        undecodable: { type: latest.type, ...latest.undecodable },
      };
      if (!latest) {
        outcomes.push({ workflowId, kind: 'skipped', status: 'NOT FOUND' });
      } else if (latest.status.name !== 'FAILED') {
        outcomes.push({ workflowId, kind: 'skipped', status: latest.status.name, ...undecodable });
      } else {
        outcomes.push({
          workflowId,
          kind: 'retried',
          result: await resetFailedRun(client, latest, options),
          ...undecodable,
        });
      }
    } catch (err) {
      outcomes.push({
        workflowId,
        kind: 'error',
        error: err instanceof Error ? err : new Error(String(err)),
      });
    }
  }
  return outcomes;
}
