import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { AggregateStockResult, StockActivities } from '../activities/stock-activities';

// The seed's AggregateStock may take 7 minutes, so start-to-close is 10: room for a slow run,
// while a hung attempt is abandoned after two 5-minute slots rather than hours. The 30 s
// heartbeat timeout notices a crashed worker long before that (the activity heartbeats every
// second). Three attempts, 10 s then 20 s apart: a database blip is retried, but a run that keeps
// failing ends (Failed in the Web UI, one alert) instead of holding the schedule, which skips
// every slot while a run is open; the next slot takes a fresh snapshot anyway.
const { aggregateStock } = proxyActivities<StockActivities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '30 seconds',
  retry: {
    initialInterval: '10 seconds',
    backoffCoefficient: 2,
    maximumAttempts: 3,
  },
});

export interface AggregateStockWorkflowInput {
  /** The moment the snapshot stands for (ISO-8601); default: the run's scheduled time. */
  scheduledAt?: string;
}

// Set by the Temporal Schedule on every run it starts: the slot the run was started for.
const SCHEDULED_START_TIME = { name: 'TemporalScheduledStartTime', type: 'DATETIME' } as const;

/**
 * Takes one stock snapshot; started every 5 minutes by the `aggregate-stock` Schedule, never two
 * at a time (see src/temporal/schedules.ts). The snapshot is keyed by the run's scheduled time,
 * so retries and a re-run of the same slot all name one snapshot.
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
