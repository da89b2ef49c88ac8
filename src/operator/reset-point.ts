import type { ProtoFailure } from '@temporalio/common';
import { causeChain } from './failures';
import type { HistoryEvent } from './visibility';

/** Where a failed run is reset to, and why there. */
export interface ResetPoint {
  /** The WorkflowTaskCompleted event to reset to (workflowTaskFinishEventId). */
  eventId: NonNullable<HistoryEvent['eventId']>;
  /**
   * `activity`: the activity whose failure failed the workflow is scheduled again, everything
   * recorded before the workflow task that scheduled it is kept. `local-activity`: the same for
   * a step that ran as a local activity, from the workflow task of its first attempt. `start`:
   * the workflow code itself failed, no step to point at; the run starts over from its first
   * workflow task.
   */
  kind: 'activity' | 'local-activity' | 'start';
  /** The step that failed, for `activity` and `local-activity`. */
  activityType?: string;
  /**
   * The steps the failed run recorded from the reset point up to the one that failed (all of
   * them for `start`), in order: what the new run does again. Steps before it are kept.
   */
  rerun: string[];
}

/** The marker a worker records for each local activity's outcome (SDK core's name). */
const LOCAL_ACTIVITY_MARKER = 'core_local_activity';

/**
 * Finds the reset point of a failed run from its history. The failure that closed the workflow
 * is followed down its cause chain to the first activity failure: the chain, not "the last
 * activity that failed", decides, since steps that run after the failure (compensation, alerts)
 * are not what should be retried.
 *
 * - A scheduled activity: its Scheduled event names the workflow task that scheduled it; the
 *   server retries it within that one event, so the reset runs it again with a fresh retry
 *   policy (all its attempts, its whole deadline).
 * - A local activity has no Scheduled event: its attempts run inside workflow tasks and only its
 *   outcome is recorded, as a marker, in the task where it gave up. Resetting to that task would
 *   resume its retries where they stopped, with its deadline already spent (a worker computes it
 *   from the first attempt's schedule time, which the SDK carries across its backoff timers) and
 *   fail at once. The run is reset to the task of its first attempt instead: the last one that
 *   started before the schedule time the marker records. Other local steps recorded in that same
 *   task run again with it: the payment's recordPayment with its hand-over, which is why both
 *   are safe to repeat.
 * - No activity in the chain (the workflow code failed by itself): the first workflow task.
 *
 * Returns undefined when the history has nothing to reset to.
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

/** The activity a Scheduled event or a local activity's marker records, if it is one. */
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
 * The WorkflowTaskCompleted event of the task in which the local step's first attempt ran: the
 * last task that started at or before the schedule time recorded with its failure. The times are
 * the server's and the worker's clocks: a worker clock behind the server's picks an earlier task,
 * which only runs more again (every step is idempotent); one ahead picks a later task only when
 * it is ahead by more than the time to the next task, and the retry then fails at once and says
 * so (./retry-outcome.ts).
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
