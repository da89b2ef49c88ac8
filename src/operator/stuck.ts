import type { Client } from '@temporalio/client';
import type { ProtoFailure } from '@temporalio/common';
import { optionalTsToDate, optionalTsToMs } from '@temporalio/common/lib/time';
import { summarizeFailure, type FailureSummary } from './failures';
import { STEP_ATTEMPT_ID } from './retry';
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

/** How much recent history to read per running workflow: the failures that matter are recent. */
const RECENT_EVENTS = 100;

/**
 * Running workflows that are not getting anywhere:
 * - a pending activity on attempt `minAttempts` or later of the server's retry policy (a
 *   database or partner that stays down);
 * - a step the workflow retries itself (activity IDs `<step>#<attempt>`, src/workflows/retry.ts)
 *   whose latest attempt failed and which is waiting to try attempt `minAttempts` or later: its
 *   attempts are separate activities, so only the history shows them;
 * - a workflow task past its first attempt: workflow code that throws (non-determinism after a
 *   bad deploy, say) is retried forever and no activity runs.
 * Costs a describe and one page of recent history per running workflow.
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
    const recent = await recentEvents(client, latest.workflowId, latest.runId);
    const undecodable: UndecodableWorkflow | undefined = latest.undecodable && {
      workflowId: latest.workflowId,
      type: latest.type,
      ...latest.undecodable,
    };
    return { stuck: stuckIn(latest, recent, minAttempts), undecodable };
  });
  return {
    stuck: perWorkflow.flatMap((w) => w?.stuck ?? []),
    undecodable: perWorkflow.flatMap((w) => (w?.undecodable ? [w.undecodable] : [])),
  };
}

function stuckIn(
  workflow: LatestRun,
  recent: readonly HistoryEvent[],
  minAttempts: number,
): StuckWork[] {
  const base = { workflowId: workflow.workflowId, runId: workflow.runId, type: workflow.type };
  const pending = workflow.raw.pendingActivities ?? [];
  const stuck: StuckWork[] = [];

  for (const activity of pending) {
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

  for (const step of failingSteps(recent)) {
    const inFlight = pending.find(
      (a) => STEP_ATTEMPT_ID.exec(a.activityId ?? '')?.[1] === step.step,
    );
    const inFlightAttempt = Number(STEP_ATTEMPT_ID.exec(inFlight?.activityId ?? '')?.[2] ?? 0);
    const nextAttemptAt = inFlight ? undefined : pendingTimerFireTime(recent, step.failedAtIndex);
    // Waiting neither on a new attempt nor on a timer: the workflow gave up on the step and
    // moved on (compensation, say), which is not stuck.
    if (!inFlight && !nextAttemptAt) continue;
    const attempts = inFlight ? inFlightAttempt : step.failedAttempt + 1;
    if (attempts < minAttempts) continue;
    stuck.push({
      ...base,
      stuckOn: {
        kind: 'activity',
        activityType: step.activityType,
        activityId: inFlight?.activityId ?? `${step.step}#${attempts}`,
      },
      attempts,
      lastFailure: summarizeFailure(step.failure),
      nextAttemptAt,
    });
  }

  const task = workflow.raw.pendingWorkflowTask;
  if (task?.attempt && task.attempt > 1) {
    // The server records the first failed attempt only (later ones are not written to the
    // history); for code that keeps throwing it is the same error.
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

interface FailingStep {
  step: string;
  activityType: string;
  /** The attempt number of the newest failed attempt. */
  failedAttempt: number;
  failure: ProtoFailure | undefined;
  /** Index of that failure in the newest-first events. */
  failedAtIndex: number;
}

/**
 * Workflow-retried steps whose newest attempt (in `recent`, newest first) failed or timed out
 * rather than completed.
 */
function failingSteps(recent: readonly HistoryEvent[]): FailingStep[] {
  const scheduled = new Map<string, HistoryEvent>();
  for (const e of recent) {
    if (e.activityTaskScheduledEventAttributes && e.eventId) scheduled.set(e.eventId.toString(), e);
  }
  const decided = new Set<string>();
  const failing: FailingStep[] = [];
  recent.forEach((e, index) => {
    const outcome =
      e.activityTaskCompletedEventAttributes ??
      e.activityTaskCanceledEventAttributes ??
      e.activityTaskFailedEventAttributes ??
      e.activityTaskTimedOutEventAttributes;
    if (!outcome?.scheduledEventId) return;
    const attributes = scheduled.get(
      outcome.scheduledEventId.toString(),
    )?.activityTaskScheduledEventAttributes;
    const match = STEP_ATTEMPT_ID.exec(attributes?.activityId ?? '');
    if (!attributes || !match?.[1] || decided.has(match[1])) return;
    decided.add(match[1]);
    const failure =
      e.activityTaskFailedEventAttributes?.failure ??
      e.activityTaskTimedOutEventAttributes?.failure;
    if (!e.activityTaskFailedEventAttributes && !e.activityTaskTimedOutEventAttributes) return;
    failing.push({
      step: match[1],
      activityType: attributes.activityType?.name ?? '?',
      failedAttempt: Number(match[2]),
      failure: failure ?? undefined,
      failedAtIndex: index,
    });
  });
  return failing;
}

/** When the newest timer started after the event at `index` fires, if it has not fired yet. */
function pendingTimerFireTime(recent: readonly HistoryEvent[], index: number): Date | undefined {
  const closed = new Set<string>();
  for (const e of recent.slice(0, index)) {
    const timerId =
      e.timerFiredEventAttributes?.timerId ?? e.timerCanceledEventAttributes?.timerId ?? undefined;
    if (timerId) closed.add(timerId);
    const started = e.timerStartedEventAttributes;
    if (started?.timerId && !closed.has(started.timerId)) {
      const at = optionalTsToMs(e.eventTime);
      const wait = optionalTsToMs(started.startToFireTimeout);
      return at === undefined || wait === undefined ? undefined : new Date(at + wait);
    }
  }
  return undefined;
}
