import { randomUUID } from 'node:crypto';
import { Context, type Info as ActivityInfo } from '@temporalio/activity';
import { msToNumber } from '@temporalio/common/lib/time';
import type { temporal } from '@temporalio/proto';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { durationToMs } from '../support/durations';
import { createActivities } from '../../src/activities';
import { createOrdersRepository, type DatabaseHandle } from '../../src/db';
import { orderWorkflowId } from '../../src/shared/order';
import { NON_RETRYABLE_FAILURE_TYPES } from '../../src/shared/errors';
import { WAREHOUSE_BACKOFF_SECONDS } from '../../src/shared/retry-policies';
import type { orderWorkflow } from '../../src/workflows/order';
import { testDatabases } from '../../harness/databases';
import { testActivityDeps } from '../../harness/activity-deps';
import { workflowBundle } from '../support/bundles';
import { until } from '../support/eventually';
import { createTestOrder } from '../support/orders';
import { useTimeSkippingStack } from '../support/time-skipping-stack';

// Timeouts with the real activities: a hung warehouse call is abandoned and retried, and the
// late original, when it finally reaches the warehouse, cannot create a second shipment.
const stack = useTimeSkippingStack({ partners: true });
let bundle: WorkflowBundleWithSourceMap;
let db: DatabaseHandle;

beforeAll(async () => {
  bundle = await workflowBundle();
  db = await testDatabases[0]!.create();
});
afterAll(() => db?.close());

async function payOnce(warehouseTimeoutMs: number) {
  const orders = createOrdersRepository(db.db);
  const order = await createTestOrder(orders, { customerEmail: 'a@example.com', totalAmount: 100 });
  const taskQueue = `test-${randomUUID()}`;
  // What each attempt saw of itself, local activities included (their policy is not in history).
  const infos: ActivityInfo[] = [];
  const worker = await Worker.create({
    connection: stack.env.nativeConnection,
    taskQueue,
    workflowBundle: bundle,
    activities: createActivities({
      ...testActivityDeps(db, { ...stack.partners, warehouseTimeoutMs }),
      client: stack.env.client,
    }),
    interceptors: {
      activity: [
        () => ({
          inbound: {
            execute: async (input, next) => {
              infos.push(Context.current().info);
              return next(input);
            },
          },
        }),
      ],
    },
  });
  const workflowId = `payment-${randomUUID()}`;
  const result = await worker.runUntil(async () => {
    await stack.env.client.workflow.execute('paymentWorkflow', {
      workflowId,
      taskQueue,
      args: [{ eventId: workflowId, orderId: order.id, amount: 100 }],
      workflowExecutionTimeout: '1 hour',
    });
    return stack.env.client.workflow
      .getHandle<typeof orderWorkflow>(orderWorkflowId(order.id))
      .result();
  });
  return {
    orderId: order.id,
    result,
    paymentWorkflow: workflowId,
    orderWorkflow: orderWorkflowId(order.id),
    infos,
  };
}

describe('warehouse call timeouts', () => {
  it('abandons a hung call, retries it, and the late original creates no second shipment', async () => {
    stack.partners.warehouse.reset();
    // The first request hangs for 1.5 s; the client gives up after 300 ms.
    stack.partners.warehouse.setMode({ kind: 'slow', delayMs: 1_500 }, 1);

    const { orderId, result } = await payOnce(300);
    expect(result).toMatchObject({ processed: [{ outcome: 'fulfilled' }] });

    // Let the late original reach the warehouse's idempotency check.
    await until(() => stack.partners.warehouse.requests.length === 2, 'two warehouse requests', {
      intervalMs: 20,
    });
    expect(stack.partners.warehouse.requests.map((r) => r.status).sort()).toEqual([200, 201]);
    expect(
      [...stack.partners.warehouse.shipments.values()].filter((s) => s.orderId === orderId),
    ).toHaveLength(1);
    expect((await createOrdersRepository(db.db).findById(orderId))?.shipmentStatus).toBe(
      'requested',
    );
  });

  it('runs every step of the flow, by name in the history, under a declared retry policy, a deadline and a start-to-close timeout', async () => {
    stack.partners.warehouse.reset();
    const run = await payOnce(1_000);
    const scheduled = [];
    const steps: string[] = [];
    for (const id of [run.paymentWorkflow, run.orderWorkflow]) {
      const history = await stack.env.client.workflow.getHandle(id).fetchHistory();
      for (const e of history.events ?? []) {
        if (e.activityTaskScheduledEventAttributes) {
          scheduled.push(e.activityTaskScheduledEventAttributes);
          steps.push(e.activityTaskScheduledEventAttributes.activityType?.name ?? '?');
        }
        const marker = e.markerRecordedEventAttributes;
        if (marker?.markerName === 'core_local_activity') steps.push(localActivityType(marker));
      }
    }
    // The short steps are local activities (markers naming their type), the others scheduled.
    expect(steps).toEqual([
      'recordPayment',
      'handOverToOrder',
      'orderEventHandledBy',
      'applyRefunds',
      'notifyWarehouse',
      'setShipmentStatus',
      'sendOrderConfirmation',
      'awardLoyaltyPoints',
      'markOrderEventHandled',
    ]);
    expect(scheduled.map((a) => a.activityType?.name)).toEqual([
      'notifyWarehouse',
      'sendOrderConfirmation',
    ]);
    for (const activity of scheduled) {
      const name = activity.activityType?.name;
      const policy = activity.retryPolicy;
      expect({ name, policy: Boolean(policy) }).toEqual({ name, policy: true });
      expect(durationToMs(policy!.initialInterval)).toBeGreaterThan(0);
      expect(policy!.backoffCoefficient).toBeGreaterThan(1);
      expect(durationToMs(policy!.maximumInterval)).toBeGreaterThan(0);
      expect(policy!.nonRetryableErrorTypes).toEqual([...NON_RETRYABLE_FAILURE_TYPES]);
      expect(durationToMs(activity.scheduleToCloseTimeout)).toBeGreaterThan(0);
      expect(durationToMs(activity.startToCloseTimeout)).toBeGreaterThan(0);
      expect(durationToMs(activity.startToCloseTimeout)).toBeLessThanOrEqual(15_000);
    }
    // A local activity's policy is applied by the SDK, not recorded in history: each attempt
    // sees it. The same preset as when the step was an activity.
    const local = run.infos.filter((i) => i.isLocal);
    expect(local.map((i) => i.activityType)).toEqual([
      'recordPayment',
      'handOverToOrder',
      'orderEventHandledBy',
      'applyRefunds',
      'setShipmentStatus',
      'awardLoyaltyPoints',
      'markOrderEventHandled',
    ]);
    for (const info of local) {
      const policy = info.retryPolicy;
      expect({ name: info.activityType, policy: Boolean(policy) }).toEqual({
        name: info.activityType,
        policy: true,
      });
      expect(policy!.backoffCoefficient).toBeGreaterThan(1);
      expect(msToNumber(policy!.initialInterval ?? 0)).toBeGreaterThan(0);
      expect(msToNumber(policy!.maximumInterval ?? 0)).toBeGreaterThan(0);
      expect(policy!.nonRetryableErrorTypes).toEqual([...NON_RETRYABLE_FAILURE_TYPES]);
      expect(info.scheduleToCloseTimeoutMs).toBe(24 * 3600_000);
      expect(info.startToCloseTimeoutMs).toBe(10_000);
    }
    // The seed's NotifyWarehouse: Tries(5), Backoff from 10 s, retryUntil(+30 minutes), and a
    // start-to-close shorter than the first wait, so attempts never overlap.
    const notify = scheduled[0]!;
    expect(notify.retryPolicy?.maximumAttempts).toBe(5);
    expect(durationToMs(notify.retryPolicy?.initialInterval)).toBe(
      WAREHOUSE_BACKOFF_SECONDS[0]! * 1000,
    );
    expect(durationToMs(notify.scheduleToCloseTimeout)).toBe(30 * 60_000);
    expect(durationToMs(notify.startToCloseTimeout)).toBeLessThan(
      WAREHOUSE_BACKOFF_SECONDS[0]! * 1000,
    );
    expect(durationToMs(notify.heartbeatTimeout)).toBeGreaterThan(0);
  });
});

/** The activity type a local activity's marker records (its `data` detail, JSON). */
function localActivityType(marker: temporal.api.history.v1.IMarkerRecordedEventAttributes): string {
  const data = marker.details?.data?.payloads?.[0]?.data;
  if (!data) return '?';
  return (
    (JSON.parse(Buffer.from(data).toString('utf8')) as { activity_type?: string }).activity_type ??
    '?'
  );
}
