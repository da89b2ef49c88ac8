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
  /** How often a snapshot is taken, as `ms` reads it ('5 minutes', '30s'); default '5 minutes'. */
  interval?: string;
  /** Default `payments`: the only queue the worker polls (see docs/schedules.md). */
  taskQueue?: string;
  /** Default `aggregate-stock`; tests use their own. */
  scheduleId?: string;
}

export interface EnsureScheduleResult {
  scheduleId: string;
  /** True when this call created the schedule; false when it brought an existing one up to date. */
  created: boolean;
}

type StockAggregationAction = ScheduleOptionsStartWorkflowAction<typeof aggregateStockWorkflow>;

/**
 * The schedule as this build wants it, for create and update alike. Exported so tests and
 * tools compare against the same definition the process applies.
 */
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
      // A backstop, not a budget: the activity's own retries end within about 31 minutes. A run
      // that never ends (no worker polls the queue, a workflow task failing on a bug) would make
      // the schedule skip every slot after it, silently; timed out, it shows and the slots resume.
      workflowExecutionTimeout: '1 hour',
    },
    policies: {
      // The seed's withoutOverlapping(): a run may take 7 minutes on a 5-minute cadence, so the
      // next slot often finds the previous run still going. SKIP drops that slot; BUFFER_ONE would
      // start it the moment the long run ends. A snapshot counts the state at one moment and the
      // next slot is at most 5 minutes away, so a skipped slot loses nothing. A buffered one starts
      // late and runs into the next slot in turn: with 7-minute runs the aggregation would run back
      // to back for good, each run late for its slot, and the database never gets a quiet minute.
      overlap: ScheduleOverlapPolicy.SKIP,
      // After the Temporal server was down, take a missed slot only while it is at most one
      // interval late: the snapshot is labelled with its slot's time, so a run started hours late
      // would put today's counts under an old time. Later than that, the next regular slot is
      // nearer anyway. (The server raises windows under 10 seconds to 10 seconds.)
      catchupWindow: interval,
      // A failed run (it already raised an alert) must not stop the snapshots after it: pausing
      // would turn one database blip into an outage lasting until somebody unpauses.
      pauseOnFailure: false,
    },
  };
}

/**
 * Creates the stock aggregation schedule, or, when it already exists, updates it to this build's
 * definition, so a changed interval or policy takes effect on deploy. Safe to call from every
 * process at start-up, concurrently: the server keeps one schedule per ID, and an operator's
 * pause (with its note) survives the update.
 */
export async function ensureStockAggregationSchedule(
  client: Client,
  options: StockAggregationScheduleOptions = {},
): Promise<EnsureScheduleResult> {
  const scheduleId = options.scheduleId ?? STOCK_AGGREGATION_SCHEDULE_ID;
  const desired = stockAggregationSchedule(options);
  try {
    await client.schedule.create<typeof aggregateStockWorkflow>({ scheduleId, ...desired });
    return { scheduleId, created: true };
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  await client.schedule
    .getHandle(scheduleId)
    .update<typeof aggregateStockWorkflow>((previous) => ({ ...desired, state: previous.state }));
  return { scheduleId, created: false };
}

/** ID of the SLA check schedule (issue 27 point 3). A wire name: never rename. */
export const SLA_CHECK_SCHEDULE_ID = 'sla-check';
export const SLA_CHECK_INTERVAL = '1 minute';

type SlaCheckAction = ScheduleOptionsStartWorkflowAction<typeof slaCheckWorkflow>;

/** The SLA check schedule as this build wants it (src/workflows/sla.ts). */
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
      // A check is a read and a signal: one still going after its minute is stuck (no worker
      // polls, say), and timing it out lets the next slots run again.
      workflowExecutionTimeout: '5 minutes',
    },
    policies: {
      // A check still going when the next slot comes: that slot is dropped, the one after reads
      // the same state anyway.
      overlap: ScheduleOverlapPolicy.SKIP,
      // Missed slots (the server was down) are not made up: the next check reads the present.
      catchupWindow: SLA_CHECK_INTERVAL,
      // A failed check (it raised its own failure alert) must not stop the ones after it.
      pauseOnFailure: false,
    },
  };
}

/** Creates the SLA check schedule or updates it to this build's definition (as the stock one). */
export async function ensureSlaCheckSchedule(
  client: Client,
  options: Pick<StockAggregationScheduleOptions, 'taskQueue' | 'scheduleId'> = {},
): Promise<EnsureScheduleResult> {
  const scheduleId = options.scheduleId ?? SLA_CHECK_SCHEDULE_ID;
  const desired = slaCheckSchedule(options);
  try {
    await client.schedule.create<typeof slaCheckWorkflow>({ scheduleId, ...desired });
    return { scheduleId, created: true };
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  await client.schedule
    .getHandle(scheduleId)
    .update<typeof slaCheckWorkflow>((previous) => ({ ...desired, state: previous.state }));
  return { scheduleId, created: false };
}
