import Long from 'long';
import { findResetPoint } from '../../src/operator/reset-point';
import type { HistoryEvent } from '../../src/operator/visibility';

// The reset point of a local step that retried across workflow tasks before it gave up: its
// backoff waits above 10 s are timers, so its failure is recorded many tasks after its first
// attempt. The history is built by hand, shaped as SDK core 1.24 writes it.

const T0 = 1_800_000_000; // seconds

function at(seconds: number, millis = 0) {
  return { seconds: Long.fromNumber(T0 + seconds), nanos: millis * 1_000_000 };
}

let id = 0;
function event(seconds: number, attributes: Partial<HistoryEvent>, millis = 0): HistoryEvent {
  id += 1;
  return { eventId: Long.fromNumber(id), eventTime: at(seconds, millis), ...attributes };
}

/** One workflow task: scheduled, started (at `seconds`), completed 20 ms later. */
function task(seconds: number): HistoryEvent[] {
  const scheduled = event(seconds, { workflowTaskScheduledEventAttributes: {} });
  const started = event(seconds, {
    workflowTaskStartedEventAttributes: { scheduledEventId: scheduled.eventId },
  });
  const completed = event(
    seconds,
    {
      workflowTaskCompletedEventAttributes: {
        scheduledEventId: scheduled.eventId,
        startedEventId: started.eventId,
      },
    },
    20,
  );
  return [scheduled, started, completed];
}

function marker(
  seconds: number,
  activityType: string,
  firstScheduled: { seconds: number; millis: number },
  failed: boolean,
): HistoryEvent {
  const data = {
    seq: id,
    attempt: failed ? 9 : 1,
    activity_id: String(id),
    activity_type: activityType,
    backoff: null,
    original_schedule_time: {
      seconds: T0 + firstScheduled.seconds,
      nanos: firstScheduled.millis * 1_000_000,
    },
  };
  return event(seconds, {
    markerRecordedEventAttributes: {
      markerName: 'core_local_activity',
      details: {
        data: {
          payloads: [
            {
              metadata: { encoding: Buffer.from('json/plain') },
              data: Buffer.from(JSON.stringify(data)),
            },
          ],
        },
      },
      ...(failed && { failure: { message: 'database unavailable' } }),
    },
  });
}

it('resets a local step that retried across timers to the task of its first attempt', () => {
  id = 0;
  const started = event(0, { workflowExecutionStartedEventAttributes: {} });
  const first = task(0);
  const recorded = marker(0, 'recordPayment', { seconds: 0, millis: 5 }, false);
  // The hand-over's attempts: in the first task, then after each backoff timer.
  const timer1 = event(0, { timerStartedEventAttributes: { timerId: '1' } });
  const fired1 = event(16, { timerFiredEventAttributes: { timerId: '1' } });
  const second = task(16);
  const timer2 = event(16, { timerStartedEventAttributes: { timerId: '2' } });
  const fired2 = event(76, { timerFiredEventAttributes: { timerId: '2' } });
  const last = task(76);
  const gaveUp = marker(76, 'handOverToOrder', { seconds: 0, millis: 8 }, true);
  const failed = event(76, {
    workflowExecutionFailedEventAttributes: {
      failure: {
        message: 'Local activity failed',
        activityFailureInfo: { activityType: { name: 'handOverToOrder' } },
        cause: { message: 'database unavailable' },
      },
    },
  });
  const events = [
    started,
    ...first,
    recorded,
    timer1,
    fired1,
    ...second,
    timer2,
    fired2,
    ...last,
    gaveUp,
    failed,
  ];

  const point = findResetPoint(events);
  // Not the task where it gave up (its deadline spent), nor the last one before that: the first.
  expect(point).toEqual({
    kind: 'local-activity',
    activityType: 'handOverToOrder',
    eventId: first[2]!.eventId,
    rerun: ['recordPayment', 'handOverToOrder'],
  });
});

it('starts over when the marker of the failed local step cannot be read', () => {
  id = 0;
  const started = event(0, { workflowExecutionStartedEventAttributes: {} });
  const first = task(0);
  const later = task(5);
  const failed = event(5, {
    workflowExecutionFailedEventAttributes: {
      failure: {
        message: 'Local activity failed',
        activityFailureInfo: { activityType: { name: 'handOverToOrder' } },
      },
    },
  });
  expect(findResetPoint([started, ...first, ...later, failed])).toEqual({
    kind: 'start',
    eventId: first[2]!.eventId,
    rerun: [],
  });
});
