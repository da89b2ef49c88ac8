import { randomUUID } from 'node:crypto';
import { ApplicationFailure, WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createAlertActivities } from '../../src/activities/alert-activities';
import { createAlertDigestActivities } from '../../src/activities/alert-digest-activities';
import type { Activities } from '../../src/activities';
import {
  digestPostWorkflowId,
  failureAlertWorkflowId,
  refundReviewAlertWorkflowId,
} from '../../src/shared/alert';
import { FailureType } from '../../src/shared/errors';
import { type OrderPaymentEvent } from '../../src/shared/order';
import { startAlertSink, type AlertSink } from '../support/alert-sink';
import { bundledWorker, workflowBundle } from '../support/bundles';
import { createTimeSkippingEnv } from '../../harness/temporal/test-env';

// Issue 24, defect 3: every alert of one order run (its refund reviews and its failure alert)
// goes out under a key of its own, so a sink that drops repeated Idempotency-Keys, as
// docs/exactly-once.md relies on, drops only repeats of one alert, never another alert.
let env: TestWorkflowEnvironment;
let sink: AlertSink<{ alert: { kind: string; order_id: number } }>;

beforeAll(async () => {
  env = await createTimeSkippingEnv();
  sink = await startAlertSink({ keyRequired: true });
});

afterAll(async () => {
  await sink?.close();
  await env?.teardown();
});

it('keeps six refund reviews and the failure of one order run apart at a sink that honours keys', async () => {
  const orderId = 40_000 + Math.floor(Math.random() * 10_000);
  const fulfilment: OrderPaymentEvent = {
    eventId: `evt_${randomUUID()}`,
    paymentId: 1,
    amount: 5400,
    firstForOrder: true,
  };
  const doubles: OrderPaymentEvent[] = Array.from({ length: 6 }, (_, i) => ({
    eventId: `evt_${randomUUID()}`,
    paymentId: i + 2,
    amount: 5400,
    firstForOrder: false,
  }));
  const taskQueue = `alert-keys-${randomUUID()}`;
  const unused = async () => undefined as never;
  const activities: Activities = {
    recordPayment: unused,
    handOverToOrder: unused,
    orderEventHandledBy: async () => ({ chain: null }),
    markOrderEventHandled: async () => undefined,
    recordRefund: unused,
    handOverRefundToOrder: unused,
    applyRefunds: async () => ({
      refundedAmount: 0,
      fullyRefunded: false,
      shipmentStatus: null,
      returnReviewRequested: false,
    }),
    requestReturnReview: unused,
    reverseLoyaltyPoints: unused,
    cancelShipment: unused,
    recordDispute: unused,
    handOverDisputeToOrder: unused,
    applyDisputes: unused,
    notifyWarehouse: async () => {
      throw ApplicationFailure.create({
        type: FailureType.WarehouseRejected,
        message: 'warehouse rejected the shipment request with 400',
        nonRetryable: true,
      });
    },
    setShipmentStatus: async () => undefined,
    requestRefundReview: async () => undefined,
    sendOrderConfirmation: unused,
    awardLoyaltyPoints: unused,
    partnerPauseState: async () => ({ paused: false as const }),
    claimPartnerRelease: async () => ({ delayMs: 0 }),
    ...createAlertActivities({ alertWebhookUrl: sink.url, temporalUiUrl: undefined }),
    ...createAlertDigestActivities({ client: env.client }),
  };
  const worker = await bundledWorker(env, await workflowBundle(), taskQueue, activities);
  const workflowId = `order-${orderId}`;
  await worker.runUntil(async () => {
    const order = await env.client.workflow.start('orderWorkflow', {
      taskQueue,
      workflowId,
      args: [{ orderId, pending: [fulfilment, ...doubles] }],
      workflowExecutionTimeout: '1 hour',
    });
    await expect(order.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    const alerts = [
      ...doubles.map((e) => refundReviewAlertWorkflowId(orderId, e.eventId)),
      failureAlertWorkflowId(workflowId, order.firstExecutionRunId),
      // The failure goes out as the "opened" post of its cause's digest.
      digestPostWorkflowId(FailureType.WarehouseRejected, order.firstExecutionRunId, 'opened'),
    ];
    for (const id of alerts) await env.client.workflow.getHandle(id).result();
  });

  // What the sink kept: one alert per Idempotency-Key; a repeated key is acknowledged, dropped.
  const keptForOrder = [...sink.kept.values()].filter((p) => p.body.alert.order_id === orderId);
  expect(keptForOrder.map((p) => p.body.alert.kind).sort()).toEqual([
    'failures_opened',
    ...Array<string>(6).fill('refund_review'),
  ]);
});
