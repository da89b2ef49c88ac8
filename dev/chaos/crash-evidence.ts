import type { Client, WorkflowHandle } from '@temporalio/client';
import type { Pass } from './crash-stack';
import { localActivityType } from './evidence';
import type { HookMessage } from '../../harness/hooks/worker-hook';

type History = NonNullable<Awaited<ReturnType<WorkflowHandle['fetchHistory']>>['events']>;

/**
 * Did the killed attempt never report? An activity's ActivityTaskStarted event is written when it
 * closes, with the attempt that closed it: a higher number than the killed one proves it. A local
 * activity runs inside a workflow task: the task the kill interrupted times out on the server
 * (WorkflowTaskTimedOut) and the next one runs the step again.
 */
export async function historyEvidence(
  client: Client,
  hold: Extract<HookMessage, { type: 'hold' }>,
  passes: readonly Pass[],
): Promise<{ hit: boolean; text: string }> {
  if (!hold.workflowId || !hold.activityType) return { hit: false, text: 'no activity context' };
  const events: History = [];
  // The run the kill hit may have continued as new or been followed by another; all runs count.
  for await (const execution of client.workflow.list({
    query: `WorkflowId = "${hold.workflowId}"`,
  })) {
    const history = await client.workflow
      .getHandle(execution.workflowId, execution.runId)
      .fetchHistory();
    events.push(...(history.events ?? []));
  }
  if (hold.local) {
    const lost = events.filter(
      (e) => e.workflowTaskTimedOutEventAttributes || e.workflowTaskFailedEventAttributes,
    ).length;
    const markers = events.filter(
      (e) =>
        e.markerRecordedEventAttributes?.markerName === 'core_local_activity' &&
        localActivityType(e.markerRecordedEventAttributes) === hold.activityType,
    ).length;
    return {
      hit: lost > 0,
      text: `history: ${lost} workflow task(s) timed out, ${markers} ${hold.activityType} marker(s)`,
    };
  }
  const scheduled = new Set(
    events
      .filter(
        (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === hold.activityType,
      )
      .map((e) => String(e.eventId)),
  );
  const attempts = events
    .filter((e) => scheduled.has(String(e.activityTaskStartedEventAttributes?.scheduledEventId)))
    .map((e) => e.activityTaskStartedEventAttributes?.attempt ?? 0);
  const best = Math.max(0, ...attempts);
  const timedOutIdle = events.some(
    (e) =>
      scheduled.has(String(e.activityTaskTimedOutEventAttributes?.scheduledEventId)) &&
      Number(e.activityTaskTimedOutEventAttributes?.startedEventId ?? 0) === 0,
  );
  if (attempts.length === 0 && timedOutIdle) {
    // Its deadline came between two attempts: no attempt closed it, so the history names none.
    // The hook saw which attempts ran after the kill.
    const later = passes
      .filter((p) => p.workflowId === hold.workflowId && p.activityType === hold.activityType)
      .map((p) => p.attempt ?? 0)
      .filter((attempt) => attempt > (hold.attempt ?? Number.POSITIVE_INFINITY));
    return {
      hit: later.length > 0,
      text:
        `history: ${hold.activityType} timed out between attempts; ` +
        `attempt ${later.length > 0 ? Math.max(...later) : 'none'} ran after the kill`,
    };
  }
  return {
    hit: best > (hold.attempt ?? Number.POSITIVE_INFINITY),
    text: `history: ${hold.activityType} closed by attempt ${best}`,
  };
}
