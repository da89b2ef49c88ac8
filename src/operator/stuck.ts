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

export interface StuckWork {
  workflowId: string;
  runId: string;
  type: string;
  /** An activity, or the workflow task (the workflow code itself). */
  stuckOn:
    { kind: 'activity'; activityType: string; activityId: string } | { kind: 'workflow task' };
  attempts: number;
  /** The retry policy's limit; undefined: unlimited (or a workflow task). */
  maximumAttempts: number | undefined;
  lastFailure: FailureSummary | undefined;
  /** Undefined while an attempt runs, while paused, or when the server does not say. */
  nextAttemptAt: Date | undefined;
  /** Paused by an operator (`temporal activity pause`): no attempt runs until unpaused or reset. */
  paused: boolean;
  orderId: string | undefined;
}

/** Stuck work with one cause: the same activity type (or the workflow task) failing the same way. */
export interface StuckGroup {
  stuckOn: string;
  /** The root cause's failure type of the last attempt; `-` when none was recorded. */
  failureType: string;
  example: string | undefined;
  work: StuckWork[];
}

export function groupByCause(stuck: readonly StuckWork[]): StuckGroup[] {
  const groups = new Map<string, StuckGroup>();
  for (const work of stuck) {
    const stuckOn = work.stuckOn.kind === 'activity' ? work.stuckOn.activityType : 'workflow task';
    const failureType = work.lastFailure?.rootCause.type ?? '-';
    const key = `${stuckOn}\u0000${failureType}`;
    let group = groups.get(key);
    if (!group) {
      groups.set(
        key,
        (group = { stuckOn, failureType, example: work.lastFailure?.rootCause.message, work: [] }),
      );
    }
    group.work.push(work);
  }
  return [...groups.values()]
    .sort((a, b) => b.work.length - a.work.length || a.stuckOn.localeCompare(b.stuckOn))
    .map((g) => ({
      ...g,
      work: [...g.work].sort((a, b) =>
        a.workflowId.localeCompare(b.workflowId, 'en', { numeric: true }),
      ),
    }));
}

export interface StuckFilter {
  minAttempts?: number;
  workflowType?: string;
}

export const DEFAULT_MIN_ATTEMPTS = 3;

export interface UndecodableWorkflow extends UndecodablePayloads {
  workflowId: string;
  type: string;
}

export interface StuckReport {
  stuck: StuckWork[];
  /** Written with a key this process lacks; their stuck work is still found (needs no decoding). */
  undecodable: UndecodableWorkflow[];
}

/** How much recent history to read for a failing workflow task: its failure is recent. */
const RECENT_EVENTS = 100;

/** A failing workflow task is retried forever (e.g. non-determinism after a bad deploy). */
export async function findStuckWork(
  client: Client,
  filter: StuckFilter = {},
): Promise<StuckWork[]> {
  return (await inspectRunningWorkflows(client, filter)).stuck;
}

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
  const memoOrder = workflow.memo?.orderId;
  const base = {
    workflowId: workflow.workflowId,
    runId: workflow.runId,
    type: workflow.type,
    orderId:
      typeof memoOrder === 'number' || typeof memoOrder === 'string'
        ? String(memoOrder)
        : /^order-(\d+)$/.exec(workflow.workflowId)?.[1],
  };
  const stuck: StuckWork[] = [];

  for (const activity of workflow.raw.pendingActivities ?? []) {
    const attempts = activity.attempt ?? 0;
    // A paused activity holds its workflow whatever its attempt: someone has to resume it.
    if (attempts < minAttempts && !activity.paused) continue;
    stuck.push({
      ...base,
      stuckOn: {
        kind: 'activity',
        activityType: activity.activityType?.name ?? '?',
        activityId: activity.activityId ?? '?',
      },
      attempts,
      maximumAttempts: activity.maximumAttempts || undefined,
      lastFailure: activity.lastFailure ? summarizeFailure(activity.lastFailure) : undefined,
      nextAttemptAt: activity.paused
        ? undefined
        : optionalTsToDate(activity.nextAttemptScheduleTime),
      paused: activity.paused === true,
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
      maximumAttempts: undefined,
      lastFailure: failure ? summarizeFailure(failure) : undefined,
      nextAttemptAt: undefined,
      paused: false,
    });
  }
  return stuck;
}

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
