import { setTimeout as delay } from 'node:timers/promises';
import { msToTs } from '@temporalio/common/lib/time';
import { createPartnerPausesRepository, type PartnerPausesRepository } from '../../src/db';
import { wakeHeldWorkflows } from '../../src/operator/partner';
import { shipmentIdempotencyKey } from '../../src/shared/constants';
import { orderWorkflowId } from '../../src/shared/order';
import { PartnerPausedSearchAttribute } from '../../src/shared/search-attributes';
import { countOrder, type PreparedScenario } from './crash-counts';
import {
  createOrder,
  deliver,
  deliverDispute,
  deliverRefund,
  startThinPayment,
} from './crash-events';
import { judgeOrder } from './crash-judge';
import type { ScenarioSpec } from './crash-scenario-spec';
import { SETTLE_TIMEOUT_MS, settle, settleOrder, waitFor } from './crash-settle';
import { NAMESPACE, type Stack } from './crash-stack';

type OrderScenario = Extract<ScenarioSpec, { kind: 'order' }>;

/** An order scenario's setup: the order, what the partners answer, and the events to trigger. */
export async function prepareOrder(
  stack: Stack,
  spec: OrderScenario,
  tag: string,
): Promise<PreparedScenario> {
  const order = await createOrder(stack, tag);
  const event = (n: number) => `evt_crash_${tag}_${n}`;
  if (spec.paidBefore) {
    // The first payment fulfils the order before the point is armed; the second is the double.
    await settle(stack.client, await deliver(stack, event(1), order.id));
    await settleOrder(stack.client, order.id);
  }
  if (spec.shippedBefore && !(await stack.warehouse.ship(shipmentIdempotencyKey(order.id)))) {
    throw new Error(`order ${order.id}: the warehouse has no shipment to mark shipped`);
  }
  if (spec.warehouse === 'rejects') stack.warehouse.setMode({ kind: 'reject', status: 400 }, 1);
  if (spec.warehouse === 'down') stack.warehouse.setMode({ kind: 'unavailable', status: 503 });
  const pauses = createPartnerPausesRepository(stack.db.db);
  if (spec.warehouse === 'paused') await pauses.pause('warehouse', 'crash-points', tag);
  let deadlineShortened: Promise<void> | undefined;
  let resumed: Promise<void> | undefined;
  return {
    trigger: async () => {
      if (spec.thin) return startThinPayment(stack, event(1), order.id);
      if (spec.refund === 'after-shipment')
        return deliverRefund(stack, event(2), event(1), order.id);
      if (spec.dispute === 'after-shipment') {
        await (await deliverDispute(stack, event(2), event(1), order.id, 'opened')).result();
        await settleOrder(stack.client, order.id);
        return deliverDispute(stack, event(3), event(1), order.id, 'lost');
      }
      if (spec.refund === 'before-payment') {
        // Applied by the order's run before the payment comes (then not yet a full refund of a
        // paid order); the payment's fulfilment then finds the order refunded in full.
        await (await deliverRefund(stack, event(2), event(1), order.id)).result();
        await settleOrder(stack.client, order.id);
      }
      const root = await deliver(stack, event(spec.paidBefore ? 2 : 1), order.id);
      if (spec.warehouse === 'down') {
        deadlineShortened = shortenWarehouseDeadline(stack, order.id);
        // Awaited in count(); handled now, so a failure is not an unhandled rejection meanwhile.
        deadlineShortened.catch(() => undefined);
      }
      if (spec.warehouse === 'paused') {
        resumed = resumeOnceHeld(stack, pauses, order.id);
        resumed.catch(() => undefined);
      }
      return root;
    },
    count: async () => {
      await deadlineShortened;
      await resumed;
      // Visibility's count of running workflows may lag a moment; the order's own run does not.
      await settleOrder(stack.client, order.id);
      return countOrder(stack, order.id);
    },
    judge: (counts, run, outage, hold) =>
      judgeOrder(stack, spec.expected, counts, run, outage, hold),
    cleanup: () => {
      stack.warehouse.setMode({ kind: 'ok' });
      // Never leave the warehouse paused for the next scenario (awaited by nobody: best effort).
      if (spec.warehouse === 'paused') pauses.resume('warehouse').catch(() => undefined);
    },
  };
}

/**
 * The operator's part of the `partner-pause` scenario: once the order's run holds its warehouse
 * call (PartnerPaused set, whatever crash the worker went through), resume at 1 call per second
 * through the same code as `ops partner resume`, with the table first and the wake-up signals.
 */
async function resumeOnceHeld(
  stack: Stack,
  pauses: PartnerPausesRepository,
  orderId: number,
): Promise<void> {
  await waitFor(`order ${orderId} held by the pause`, async () => {
    try {
      const run = await stack.client.workflow.getHandle(orderWorkflowId(orderId)).describe();
      return run.typedSearchAttributes.get(PartnerPausedSearchAttribute) ? true : undefined;
    } catch {
      return undefined;
    }
  });
  await pauses.resume('warehouse', 1);
  await wakeHeldWorkflows(stack.client, 'warehouse');
}

// The deadline the warehouse-down scenario gives the notification instead of its 30 minutes: the
// first attempt fails at once, the second after the 10 s backoff, and the third would come 30 s
// later, past the deadline, so the server gives up on the deadline (retry state TIMEOUT).
const WAREHOUSE_DOWN_DEADLINE_SECONDS = 20;

/**
 * "Down until the deadline" in seconds, not the policy's 30 minutes: once the notification is
 * pending, its schedule-to-close timeout is shortened with the server's UpdateActivityOptions
 * (what `temporal activity update-options` sends). The workflow code, its bundle and its retry
 * policy stay as they ship; the server applies the deadline, as it would the real one.
 */
async function shortenWarehouseDeadline(stack: Stack, orderId: number): Promise<void> {
  const order = stack.client.workflow.getHandle(orderWorkflowId(orderId));
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  for (;;) {
    let description;
    try {
      description = await order.describe();
    } catch {
      // The order's workflow is not started yet, or the server answers slowly: ask again.
    }
    const pending = description?.raw.pendingActivities ?? [];
    if (pending.some((a) => a.activityType?.name === 'notifyWarehouse')) break;
    if (description && description.status.name !== 'RUNNING') {
      throw new Error('the order workflow closed before its warehouse notification was pending');
    }
    if (Date.now() > deadline) throw new Error('the warehouse notification never became pending');
    await delay(100);
  }
  await stack.client.workflowService.updateActivityOptions({
    namespace: NAMESPACE,
    execution: { workflowId: order.workflowId },
    identity: 'crash-points',
    type: 'notifyWarehouse',
    activityOptions: {
      scheduleToCloseTimeout: msToTs(`${WAREHOUSE_DOWN_DEADLINE_SECONDS} seconds`),
    },
    updateMask: { paths: ['schedule_to_close_timeout'] },
  });
}
