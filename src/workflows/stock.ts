import { type ActivityOptions, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { HeavyActivities } from '../activities/heavy';
import type { AggregateStockResult } from '../activities/stock-activities';
import { HEAVY_TASK_QUEUE } from '../shared/constants';

/**
 * How `aggregateStock` is run. Exported so test/operations/worker-settings.test.ts can see which
 * queue it runs on: the payments worker's shutdown grace time covers it only while it is there.
 */
export const AGGREGATE_STOCK_ACTIVITY_OPTIONS = {
  // The workflow stays on `payments` (the Schedule starts it there, and runs in flight replay
  // unchanged: the task queue of a scheduled activity is not checked on replay), but the activity
  // runs in the heavy worker's pool. A 7-minute activity on `payments` made that worker's
  // shutdown grace time 10.5 minutes; the heavy worker waits 10 s, then cancels it at its next
  // heartbeat (every second), and another heavy worker retries it. That loses nothing but the
  // time spent: the activity is idempotent, keyed by the run's scheduled time.
  taskQueue: HEAVY_TASK_QUEUE,
  // The seed's AggregateStock may take 7 minutes, so start-to-close is 10: room for a slow run,
  // while a hung attempt is abandoned after two 5-minute slots rather than hours.
  startToCloseTimeout: '10 minutes',
  // Notices a crashed worker long before that (the activity heartbeats every second).
  heartbeatTimeout: '30 seconds',
  // Three attempts, 10 s then 20 s apart: a database blip or a heavy worker's restart is retried,
  // but a run that keeps failing ends (Failed in the Web UI, one alert) instead of holding the
  // schedule, which skips every slot while a run is open; the next slot takes a fresh snapshot.
  retry: {
    initialInterval: '10 seconds',
    backoffCoefficient: 2,
    maximumAttempts: 3,
  },
} as const satisfies ActivityOptions;

const { aggregateStock } = proxyActivities<HeavyActivities>(AGGREGATE_STOCK_ACTIVITY_OPTIONS);

export interface AggregateStockWorkflowInput {
  /** The moment the snapshot stands for (ISO-8601); default: the run's scheduled time. */
  scheduledAt?: string;
}

// Set by the Temporal Schedule on every run it starts: the slot the run was started for.
const SCHEDULED_START_TIME = { name: 'TemporalScheduledStartTime', type: 'DATETIME' } as const;

/**
 * Takes one stock snapshot; started every 5 minutes by the `aggregate-stock` Schedule, never two
 * at a time (see src/temporal/schedules.ts), on task queue `payments`; its one activity runs on
 * `heavy`. The snapshot is keyed by the run's scheduled time, so retries and a re-run of the same
 * slot all name one snapshot.
 */
export async function aggregateStockWorkflow(
  input: AggregateStockWorkflowInput = {},
): Promise<AggregateStockResult> {
  const info = workflowInfo();
  const scheduledAt =
    input.scheduledAt ??
    info.typedSearchAttributes.get(SCHEDULED_START_TIME)?.toISOString() ??
    info.startTime.toISOString();
  return aggregateStock({ scheduledAt });
}
