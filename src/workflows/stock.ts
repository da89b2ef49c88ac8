import { type ActivityOptions, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { HeavyActivities } from '../activities/heavy';
import type { AggregateStockResult } from '../activities/stock-activities';
import { HEAVY_TASK_QUEUE } from '../shared/constants';

/** Exported for worker-settings.test.ts: the payments worker's grace time covers it only there. */
export const AGGREGATE_STOCK_ACTIVITY_OPTIONS = {
  // On `heavy`: a 7-minute activity made the payments worker's shutdown grace 10.5 minutes.
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

/** Keyed by the scheduled time: retries and a re-run name one snapshot. */
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
