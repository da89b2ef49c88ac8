import {
  ScheduleAlreadyRunning,
  ScheduleOverlapPolicy,
  type Client,
  type ScheduleOptions,
  type ScheduleOptionsStartWorkflowAction,
} from '@temporalio/client';
import { PAYMENTS_TASK_QUEUE } from '../shared/constants';
import type { aggregateStockWorkflow } from '../workflows/stock';
import type { slaCheckWorkflow } from '../workflows/sla';

/** ID of the stock aggregation schedule (the seed's AggregateStock). A wire name: never rename. */
export const STOCK_AGGREGATION_SCHEDULE_ID = 'aggregate-stock';
export const STOCK_AGGREGATION_INTERVAL = '5 minutes';

export interface StockAggregationScheduleOptions {
  /** As `ms` reads it ('5 minutes', '30s'). */
  interval?: string;
  taskQueue?: string;
  scheduleId?: string;
}

export interface EnsureScheduleResult {
  scheduleId: string;
  /** false: it existed and was brought up to date. */
  created: boolean;
}

type StockAggregationAction = ScheduleOptionsStartWorkflowAction<typeof aggregateStockWorkflow>;

export function stockAggregationSchedule(
  options: StockAggregationScheduleOptions = {},
): Omit<ScheduleOptions<StockAggregationAction>, 'scheduleId' | 'state'> {
  const scheduleId = options.scheduleId ?? STOCK_AGGREGATION_SCHEDULE_ID;
  const interval = options.interval ?? STOCK_AGGREGATION_INTERVAL;
  return {
    spec: { intervals: [{ every: interval }] },
    action: {
      type: 'startWorkflow',
      workflowType: 'aggregateStockWorkflow',
      // Each run's ID is this plus its scheduled time: aggregate-stock-2025-01-31T09:05:00Z.
      workflowId: scheduleId,
      taskQueue: options.taskQueue ?? PAYMENTS_TASK_QUEUE,
      args: [{}],
      // A backstop (the activity's retries end within about 31 minutes): a run that never ends
      // would make the schedule skip every slot after it, silently.
      workflowExecutionTimeout: '1 hour',
    },
    policies: {
      // The seed's withoutOverlapping(): a run may take 7 minutes on a 5-minute cadence. A skipped
      // snapshot loses nothing; buffered ones would run back to back for good, each late.
      overlap: ScheduleOverlapPolicy.SKIP,
      // A snapshot is labelled with its slot's time: one started hours late (the server was
      // down) would put today's counts under an old time.
      catchupWindow: interval,
      // A failed run already alerted; pausing would turn one database blip into an outage.
      pauseOnFailure: false,
    },
  };
}

/** Updated on every start, so a changed policy takes effect on deploy; a pause survives it. */
async function ensureSchedule(
  client: Client,
  scheduleId: string,
  desired: Omit<ScheduleOptions, 'scheduleId' | 'state'>,
): Promise<EnsureScheduleResult> {
  try {
    await client.schedule.create({ scheduleId, ...desired });
    return { scheduleId, created: true };
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  await client.schedule
    .getHandle(scheduleId)
    .update((previous) => ({ ...desired, state: previous.state }));
  return { scheduleId, created: false };
}

export function ensureStockAggregationSchedule(
  client: Client,
  options: StockAggregationScheduleOptions = {},
): Promise<EnsureScheduleResult> {
  const scheduleId = options.scheduleId ?? STOCK_AGGREGATION_SCHEDULE_ID;
  return ensureSchedule(client, scheduleId, stockAggregationSchedule(options));
}

/** ID of the SLA check schedule (issue 27 point 3). A wire name: never rename. */
export const SLA_CHECK_SCHEDULE_ID = 'sla-check';
export const SLA_CHECK_INTERVAL = '1 minute';

type SlaCheckAction = ScheduleOptionsStartWorkflowAction<typeof slaCheckWorkflow>;

export function slaCheckSchedule(
  options: Pick<StockAggregationScheduleOptions, 'taskQueue' | 'scheduleId'> = {},
): Omit<ScheduleOptions<SlaCheckAction>, 'scheduleId' | 'state'> {
  return {
    spec: { intervals: [{ every: SLA_CHECK_INTERVAL }] },
    action: {
      type: 'startWorkflow',
      workflowType: 'slaCheckWorkflow',
      workflowId: options.scheduleId ?? SLA_CHECK_SCHEDULE_ID,
      taskQueue: options.taskQueue ?? PAYMENTS_TASK_QUEUE,
      args: [],
      // One still going after its minute is stuck; timed out, the next slots run again.
      workflowExecutionTimeout: '5 minutes',
    },
    policies: {
      // Each check reads the present: a dropped or missed slot loses nothing.
      overlap: ScheduleOverlapPolicy.SKIP,
      catchupWindow: SLA_CHECK_INTERVAL,
      pauseOnFailure: false,
    },
  };
}

export function ensureSlaCheckSchedule(
  client: Client,
  options: Pick<StockAggregationScheduleOptions, 'taskQueue' | 'scheduleId'> = {},
): Promise<EnsureScheduleResult> {
  return ensureSchedule(
    client,
    options.scheduleId ?? SLA_CHECK_SCHEDULE_ID,
    slaCheckSchedule(options),
  );
}
