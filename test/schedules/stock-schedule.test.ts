import { randomUUID } from 'node:crypto';
import { ScheduleOverlapPolicy, type Client, type ScheduleSummary } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import {
  createStockActivities,
  type AggregateStockInput,
} from '../../src/activities/stock-activities';
import { createOrdersRepository, type OrdersRepository } from '../../src/db/repositories/orders';
import { createStockRepository, type StockRepository } from '../../src/db/repositories/stock';
import { HEAVY_TASK_QUEUE, PAYMENTS_TASK_QUEUE } from '../../src/shared/constants';
import {
  ensureStockAggregationSchedule,
  STOCK_AGGREGATION_SCHEDULE_ID,
} from '../../src/temporal/schedules';
import type { aggregateStockWorkflow } from '../../src/workflows/stock';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { workflowBundle } from '../support/bundles';
import { eventually } from '../support/eventually';

// The stock aggregation schedule (the seed's AggregateStock with withoutOverlapping) on a real
// dev server: schedules are run by the server itself, which the time-skipping server does not do.
const SLOW_RUN_MS = 3_000;

let env: TestWorkflowEnvironment;
let client: Client;
let db: TestDatabaseHandle;
let stock: StockRepository;
let orders: OrdersRepository;
// The workflows on a queue of their own; their activity on `heavy`, where the workflow sends it
// (src/workflows/stock.ts), served by one worker with only the stock activity. Each test file has
// a dev server of its own, so no other worker polls `heavy` here.
const workflowQueue = `stock-${randomUUID()}`;
// Runs take 3 s while the overlap test sets this, and no time otherwise.
let slowRuns = false;
let workers: Worker[] = [];
let workerRuns: Array<Promise<void>> = [];

beforeAll(async () => {
  const [started, bundle, database] = await Promise.all([
    createDevServerEnv(),
    workflowBundle({ workflowsPath: require.resolve('./workflows') }),
    testDatabases[0]!.create(),
  ]);
  env = started;
  client = env.client;
  db = database;
  stock = createStockRepository(db.db);
  orders = createOrdersRepository(db.db);
  const slow = createStockActivities({ stock, aggregationDelayMs: SLOW_RUN_MS });
  const fast = createStockActivities({ stock, aggregationDelayMs: 0 });
  workers = await Promise.all([
    Worker.create({
      connection: env.nativeConnection,
      taskQueue: workflowQueue,
      workflowBundle: bundle,
    }),
    Worker.create({
      connection: env.nativeConnection,
      taskQueue: HEAVY_TASK_QUEUE,
      activities: {
        aggregateStock: (input: AggregateStockInput) =>
          (slowRuns ? slow : fast).aggregateStock(input),
      },
    }),
  ]);
  workerRuns = workers.map((w) => w.run());
});

afterAll(async () => {
  for (const w of workers) w.shutdown();
  await Promise.allSettled(workerRuns);
  await db?.close();
  await env?.teardown();
});

async function listSchedules(idPrefix: string): Promise<ScheduleSummary[]> {
  const found: ScheduleSummary[] = [];
  for await (const schedule of client.schedule.list()) {
    if (schedule.scheduleId.startsWith(idPrefix)) found.push(schedule);
  }
  return found;
}

describe('ensureStockAggregationSchedule', () => {
  it('creates one schedule however often and however concurrently it is called', async () => {
    const scheduleId = `${STOCK_AGGREGATION_SCHEDULE_ID}-${randomUUID()}`;
    try {
      const concurrent = await Promise.all([
        ensureStockAggregationSchedule(client, { scheduleId }),
        ensureStockAggregationSchedule(client, { scheduleId }),
      ]);
      const later = await ensureStockAggregationSchedule(client, { scheduleId });

      expect(concurrent.map((r) => r.created).sort()).toEqual([false, true]);
      expect(later).toEqual({ scheduleId, created: false });
      // Schedule listing goes through visibility, which trails writes.
      const listed = await eventually(async () => {
        const found = await listSchedules(scheduleId);
        expect(found).not.toHaveLength(0);
        return found;
      });
      expect(listed.map((s) => s.scheduleId)).toEqual([scheduleId]);
      expect(listed[0]!.action?.workflowType).toBe('aggregateStockWorkflow');

      const described = await client.schedule.getHandle(scheduleId).describe();
      expect(described.spec.intervals).toMatchObject([{ every: 5 * 60_000 }]);
      expect(described.policies).toEqual({
        overlap: ScheduleOverlapPolicy.SKIP,
        catchupWindow: 5 * 60_000,
        pauseOnFailure: false,
      });
      expect(described.action).toMatchObject({
        type: 'startWorkflow',
        workflowType: 'aggregateStockWorkflow',
        workflowId: scheduleId,
        taskQueue: PAYMENTS_TASK_QUEUE,
        args: [{}],
      });
    } finally {
      await client.schedule.getHandle(scheduleId).delete();
    }
  });

  it('brings an existing schedule to a new interval, keeping an operator’s pause', async () => {
    const scheduleId = `${STOCK_AGGREGATION_SCHEDULE_ID}-${randomUUID()}`;
    const handle = client.schedule.getHandle(scheduleId);
    try {
      await ensureStockAggregationSchedule(client, { scheduleId });
      await handle.pause('stocktaking in progress');

      const result = await ensureStockAggregationSchedule(client, {
        scheduleId,
        interval: '10 minutes',
      });

      expect(result.created).toBe(false);
      const described = await handle.describe();
      expect(described.spec.intervals).toMatchObject([{ every: 10 * 60_000 }]);
      expect(described.policies.catchupWindow).toBe(10 * 60_000);
      expect(described.state).toMatchObject({ paused: true, note: 'stocktaking in progress' });
    } finally {
      await handle.delete();
    }
  });
});

describe('the stock aggregation schedule', () => {
  afterEach(() => {
    slowRuns = false;
  });

  it('never runs two aggregations at once: a run that outlasts the interval makes the next slots skip', async () => {
    const scheduleId = `${STOCK_AGGREGATION_SCHEDULE_ID}-${randomUUID()}`;
    const handle = client.schedule.getHandle(scheduleId);
    const startedAt = Date.now();
    slowRuns = true;
    await ensureStockAggregationSchedule(client, {
      scheduleId,
      interval: '2 seconds',
      taskQueue: workflowQueue,
    });
    let description;
    try {
      // Runs of 3 s on a 2 s cadence: about one run every other slot. Three runs prove it.
      description = await handle.describe();
      while (description.info.recentActions.length < 3 && Date.now() - startedAt < 13_000) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        description = await handle.describe();
      }
    } finally {
      await handle.delete();
    }

    const actions = description.info.recentActions;
    expect(actions.length).toBeGreaterThanOrEqual(2);
    expect(description.info.numActionsSkippedOverlap).toBeGreaterThan(0);

    // Deleting the schedule does not stop its last run: let it finish, then read every run's span.
    const runs = await Promise.all(
      actions.map(async ({ action, scheduledAt }) => {
        const run = client.workflow.getHandle<typeof aggregateStockWorkflow>(
          action.workflow.workflowId,
          action.workflow.firstExecutionRunId,
        );
        const result = await run.result();
        const { startTime, closeTime } = await run.describe();
        return { scheduledAt, startTime, closeTime: closeTime!, result };
      }),
    );
    runs.sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
    for (let i = 1; i < runs.length; i++) {
      const previous = runs[i - 1]!;
      const current = runs[i]!;
      expect(current.startTime.getTime()).toBeGreaterThanOrEqual(previous.closeTime.getTime());
      // The slot in between (2 s after the previous one) was skipped, not queued.
      expect(current.scheduledAt.getTime() - previous.scheduledAt.getTime()).toBeGreaterThan(2_000);
    }
    // Each run's snapshot is labelled with the slot it was scheduled for.
    for (const run of runs) {
      expect(run.result.takenAt).toBe(run.scheduledAt.toISOString());
      expect(run.result.created).toBe(true);
    }
  });
});

describe('aggregateStockWorkflow', () => {
  async function addOrder(paid: boolean, shipment: 'requested' | 'failed' | null) {
    const { order } = await orders.createWithIdempotencyKey({
      userId: 3,
      customerEmail: 'buyer@example.com',
      totalAmount: 2_500,
    });
    if (paid) {
      await db.db
        .updateTable('orders')
        .set({ status: 'paid' })
        .where('id', '=', order.id)
        .execute();
    }
    if (shipment) await orders.setShipmentStatus(order.id, shipment);
  }

  it('writes a snapshot with the counts of the orders in the database', async () => {
    const before = await stock.listSnapshots({ limit: 1000 });
    await addOrder(false, null);
    await addOrder(true, null);
    await addOrder(true, 'requested');
    await addOrder(true, 'requested');
    await addOrder(true, 'requested');
    await addOrder(true, 'failed');
    const scheduledAt = '2025-01-31T09:05:00.000Z';

    const result = await client.workflow.execute<typeof aggregateStockWorkflow>(
      'aggregateStockWorkflow',
      {
        workflowId: `aggregate-stock-test-${randomUUID()}`,
        taskQueue: workflowQueue,
        args: [{ scheduledAt }],
        workflowExecutionTimeout: '30 seconds',
      },
    );

    expect(result).toEqual({
      snapshotId: expect.any(Number),
      takenAt: scheduledAt,
      created: true,
      ordersPaid: 5,
      shipmentsRequested: 3,
      shipmentsFailed: 1,
    });
    const after = await stock.listSnapshots({ limit: 1000 });
    expect(after).toHaveLength(before.length + 1);
    expect(after.find((s) => s.id === result.snapshotId)).toMatchObject({
      takenAt: scheduledAt,
      ordersPaid: 5,
      shipmentsRequested: 3,
      shipmentsFailed: 1,
    });
  });

  it('a second run for the same slot returns the snapshot already taken', async () => {
    const scheduledAt = '2025-01-31T09:10:00.000Z';
    const run = () =>
      client.workflow.execute<typeof aggregateStockWorkflow>('aggregateStockWorkflow', {
        workflowId: `aggregate-stock-test-${randomUUID()}`,
        taskQueue: workflowQueue,
        args: [{ scheduledAt }],
        workflowExecutionTimeout: '30 seconds',
      });

    const first = await run();
    await addOrder(true, 'requested');
    const second = await run();

    expect(first.created).toBe(true);
    expect(second).toEqual({ ...first, created: false });
  });

  it('started by hand without a time, labels the snapshot with the run’s start time', async () => {
    const handle = await client.workflow.start<typeof aggregateStockWorkflow>(
      'aggregateStockWorkflow',
      {
        workflowId: `aggregate-stock-test-${randomUUID()}`,
        taskQueue: workflowQueue,
        args: [],
        workflowExecutionTimeout: '30 seconds',
      },
    );

    const result = await handle.result();

    const { startTime } = await handle.describe();
    expect(result.takenAt).toBe(startTime.toISOString());
  });
});
