import type { Client } from '@temporalio/client';
import { optionalTsToDate } from '@temporalio/common/lib/time';
import { summarizeFailure, type FailureSummary } from './failures';
import {
  DESCRIBE_CONCURRENCY,
  describeLatestRun,
  type HistoryEvent,
  type LatestRun,
  mapConcurrently,
  runsByWorkflowId,
  type UndecodablePayloads,
} from './visibility';

/** One piece of work that keeps failing inside a running workflow. */
export interface StuckWork {
  workflowId: string;
  runId: string;
  type: string;
  /** An activity that keeps failing its attempts, or the workflow task (the workflow code itself). */
  stuckOn:
    { kind: 'activity'; activityType: string; activityId: string } | { kind: 'workflow task' };
  /** The attempt the work is on, or will make next (the first attempt is 1). */
  attempts: number;
  lastFailure: FailureSummary | undefined;
  /** When the next attempt starts; undefined while one runs or when the server does not say. */
  nextAttemptAt: Date | undefined;
}

export interface StuckFilter {
  /** An activity is listed from this attempt on. Default 3. */
  minAttempts?: number;
  workflowType?: string;
}

export const DEFAULT_MIN_ATTEMPTS = 3;

/** A running workflow whose memo cannot be decoded with the configured key(s). */
export interface UndecodableWorkflow extends UndecodablePayloads {
  workflowId: string;
  type: string;
}

export interface StuckReport {
  stuck: StuckWork[];
  /**
   * Running workflows, stuck or not, whose payloads this process cannot decode: written with a
   * key it lacks. Their stuck work is still found (none of it needs decoding).
   */
  undecodable: UndecodableWorkflow[];
}

/** How much recent history to read for a failing workflow task: its failure is recent. */
const RECENT_EVENTS = 100;

/**
 * Running workflows that are not getting anywhere, as the server reports them:
 * - a pending activity on attempt `minAttempts` or later of its retry policy (a database or
 *   partner that stays down), with its last failure and next attempt time;
 * - a workflow task past its first attempt: workflow code that throws (non-determinism after a
 *   bad deploy, say) is retried forever and no activity runs.
 * Costs a describe per running workflow, and one page of recent history per failing workflow task.
 */
export async function findStuckWork(
  client: Client,
  filter: StuckFilter = {},
): Promise<StuckWork[]> {
  return (await inspectRunningWorkflows(client, filter)).stuck;
}

/** `findStuckWork`, and the running workflows whose payloads cannot be decoded here. */
export async function inspectRunningWorkflows(
  client: Client,
  filter: StuckFilter = {},
): Promise<StuckReport> {
  // Attempt 1 has not failed yet, whatever the threshold says.
  const minAttempts = Math.max(filter.minAttempts ?? DEFAULT_MIN_ATTEMPTS, 2);
  const running = [...(await runsByWorkflowId(client, 'Running', filter.workflowType)).keys()];
  const perWorkflow = await mapConcurrently(running, DESCRIBE_CONCURRENCY, async (id) => {
    const latest = await describeLatestRun(client, id);
    if (latest?.status.name !== 'RUNNING') return undefined;
    const undecodable: UndecodableWorkflow | undefined = latest.undecodable && {
      workflowId: latest.workflowId,
      type: latest.type,
      ...latest.undecodable,
    };
    return { stuck: await stuckIn(client, latest, minAttempts), undecodable };
  });
  return {
    stuck: perWorkflow.flatMap((w) => w?.stuck ?? []),
    undecodable: perWorkflow.flatMap((w) => (w?.undecodable ? [w.undecodable] : [])),
  };
}

async function stuckIn(
  client: Client,
  workflow: LatestRun,
  minAttempts: number,
): Promise<StuckWork[]> {
  const base = { workflowId: workflow.workflowId, runId: workflow.runId, type: workflow.type };
  const stuck: StuckWork[] = [];

  for (const activity of workflow.raw.pendingActivities ?? []) {
    const attempts = activity.attempt ?? 0;
    if (attempts < minAttempts) continue;
    stuck.push({
      ...base,
      stuckOn: {
        kind: 'activity',
        activityType: activity.activityType?.name ?? '?',
        activityId: activity.activityId ?? '?',
      },
      attempts,
      lastFailure: activity.lastFailure ? summarizeFailure(activity.lastFailure) : undefined,
      nextAttemptAt: optionalTsToDate(activity.nextAttemptScheduleTime),
    });
  }

  const task = workflow.raw.pendingWorkflowTask;
  if (task?.attempt && task.attempt > 1) {
    // The server records the first failed attempt only (later ones are not written to the
    // history); for code that keeps throwing it is the same error.
    const recent = await recentEvents(client, workflow.workflowId, workflow.runId);
    const failed = recent.find((e) => e.workflowTaskFailedEventAttributes);
    const failure = failed?.workflowTaskFailedEventAttributes?.failure;
    stuck.push({
      ...base,
      stuckOn: { kind: 'workflow task' },
      attempts: task.attempt,
      lastFailure: failure ? summarizeFailure(failure) : undefined,
      nextAttemptAt: undefined,
    });
  }
  return stuck;
}

/** The newest events of a run, newest first. */
async function recentEvents(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<HistoryEvent[]> {
  const response = await client.workflowService.getWorkflowExecutionHistoryReverse({
    namespace: client.options.namespace,
    execution: { workflowId, runId },
    maximumPageSize: RECENT_EVENTS,
  });
  return response.history?.events ?? [];
}
