import type { ProtoFailure } from '@temporalio/common';
import { causeChain } from './failures';
import type { HistoryEvent } from './visibility';

export interface ResetPoint {
  /** The WorkflowTaskCompleted event to reset to (workflowTaskFinishEventId). */
  eventId: NonNullable<HistoryEvent['eventId']>;
  /**
   * `activity`: its scheduling task is reset to; `local-activity`: the task of its first
   * attempt; `start`: the workflow code failed, the run starts over.
   */
  kind: 'activity' | 'local-activity' | 'start';
  activityType?: string;
  /** The steps from the reset point up to the failed one: what the new run does again. */
  rerun: string[];
}

/** The marker a worker records for each local activity's outcome (SDK core's name). */
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

/**
 * The first activity failure down the cause chain (later steps are compensation). A local
 * activity resets to the task of its first attempt: its marker's task would resume its retries
 * with the deadline spent (the SDK keeps the first schedule time across backoff timers).
 */
export function findResetPoint(events: readonly HistoryEvent[]): ResetPoint | undefined {
  const failed = events.filter((e) => e.workflowExecutionFailedEventAttributes).at(-1);
  const failure = failed?.workflowExecutionFailedEventAttributes?.failure;
  const activityFailure = causeChain(failure).find((f) => f.activityFailureInfo);
  const info = activityFailure?.activityFailureInfo;
  const activityType = info?.activityType?.name ?? undefined;

  const scheduled = info?.scheduledEventId
    ? events.find((e) => sameId(e.eventId, info.scheduledEventId!))
    : undefined;
  const scheduledBy = scheduled?.activityTaskScheduledEventAttributes?.workflowTaskCompletedEventId;
  if (scheduledBy) return point(events, scheduledBy, 'activity', activityType);

  if (activityFailure && activityType) {
    const firstAttempt = firstAttemptTask(events, activityType);
    if (firstAttempt) return point(events, firstAttempt, 'local-activity', activityType);
  }
  // No activity in the chain, or a local step whose first attempt cannot be placed: everything
  // runs again, from the first workflow task.
  const first = events.find((e) => e.workflowTaskCompletedEventAttributes)?.eventId;
  return first ? point(events, first, 'start') : undefined;
}

function point(
  events: readonly HistoryEvent[],
  eventId: NonNullable<HistoryEvent['eventId']>,
  kind: ResetPoint['kind'],
  activityType?: string,
): ResetPoint {
  const completed = events.find((e) => sameId(e.eventId, eventId));
  const startedId = completed?.workflowTaskCompletedEventAttributes?.startedEventId;
  const after = startedId ? events.filter((e) => Number(e.eventId) > Number(startedId)) : [];
  const steps = after.map(stepName).filter((s): s is string => s !== undefined);
  // Up to the failed step: what follows it in the failed run (its compensation) need not recur.
  const failedAt = activityType === undefined ? -1 : steps.indexOf(activityType);
  const rerun = [...new Set(failedAt >= 0 ? steps.slice(0, failedAt + 1) : steps)];
  return { eventId, kind, ...(activityType !== undefined && { activityType }), rerun };
}

function stepName(event: HistoryEvent): string | undefined {
  return (
    event.activityTaskScheduledEventAttributes?.activityType?.name ??
    localActivityMarker(event)?.activityType ??
    undefined
  );
}

interface LocalActivityMarker {
  activityType: string;
  /** When its first attempt was scheduled, in ns since the epoch (the worker's clock). */
  firstScheduledAtNs: bigint | undefined;
  failure: ProtoFailure | undefined;
}

function localActivityMarker(event: HistoryEvent): LocalActivityMarker | undefined {
  const marker = event.markerRecordedEventAttributes;
  if (marker?.markerName !== LOCAL_ACTIVITY_MARKER) return undefined;
  // SDK core writes `data` itself, as plain JSON, never through a payload codec.
  const bytes = marker.details?.data?.payloads?.[0]?.data;
  if (!bytes) return undefined;
  let data: { activity_type?: unknown; original_schedule_time?: unknown };
  try {
    data = JSON.parse(Buffer.from(bytes).toString('utf8')) as typeof data;
  } catch {
    return undefined;
  }
  if (typeof data.activity_type !== 'string') return undefined;
  return {
    activityType: data.activity_type,
    firstScheduledAtNs: timestampNs(data.original_schedule_time as Timestamp | undefined),
    failure: marker.failure ?? undefined,
  };
}

/**
 * The last task started at or before the schedule time recorded with the failure. Server and
 * worker clocks differ: a worker behind picks an earlier task (more runs again, all idempotent);
 * one ahead by more than a task's gap makes the retry fail at once and say so (retry-outcome.ts).
 */
function firstAttemptTask(
  events: readonly HistoryEvent[],
  activityType: string,
): NonNullable<HistoryEvent['eventId']> | undefined {
  const marker = events
    .map(localActivityMarker)
    .filter((m) => m?.activityType === activityType && m.failure)
    .at(-1);
  const scheduledAt = marker?.firstScheduledAtNs;
  if (scheduledAt === undefined) return undefined;
  const started = events
    .filter((e) => e.workflowTaskStartedEventAttributes)
    .filter((e) => (timestampNs(e.eventTime) ?? scheduledAt + 1n) <= scheduledAt)
    .at(-1);
  if (!started?.eventId) return undefined;
  const completed = events.find((e) =>
    sameId(e.workflowTaskCompletedEventAttributes?.startedEventId, started.eventId!),
  );
  return completed?.eventId ?? undefined;
}

/** A protobuf Timestamp: from the server (seconds a Long) or from core's JSON (a number). */
interface Timestamp {
  seconds?: { toString(): string } | number | null;
  nanos?: number | null;
}

function timestampNs(time: Timestamp | null | undefined): bigint | undefined {
  if (time?.seconds === undefined || time.seconds === null) return undefined;
  return BigInt(time.seconds.toString()) * 1_000_000_000n + BigInt(time.nanos ?? 0);
}

function sameId(a: { toString(): string } | null | undefined, b: { toString(): string }): boolean {
  return a !== null && a !== undefined && a.toString() === b.toString();
}
