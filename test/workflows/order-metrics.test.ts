import { randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  MetricsBuffer,
  Runtime,
  type BufferedMetricUpdate,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import type { Activities } from '../../src/activities';
import { BusinessMetric } from '../../src/shared/business-metrics';
import { FailureType } from '../../src/shared/errors';
import { paymentRecordedSignal, type OrderPaymentEvent } from '../../src/shared/order';
import type { PaymentWorkflowInput } from '../../src/shared/payment';
import { bundledWorker, workflowBundle } from '../support/bundles';
import { createTimeSkippingEnv } from '../../harness/temporal/test-env';

// The business metrics the order workflow emits through the SDK's metric meter, read from a
// metrics buffer on this file's runtime: each fulfilment counted once by outcome, a compensation
// by its cause, and the payment-to-shipment time measured from the webhook's acceptance, which
// the payment workflow hands over. The names reaching Prometheus unprefixed is checked end to end
// (test/monitoring/dashboard.e2e.test.ts).

const buffer = new MetricsBuffer();
let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  // The setup file's runtime has no metrics exporter; this file's runtime keeps its logger and
  // buffers the metrics. Nothing runs on the runtime yet, so it can be replaced.
  const { logger } = Runtime.instance();
  await Runtime.instance().shutdown();
  Runtime.install({ logger, telemetryOptions: { logging: { forward: {} }, metrics: { buffer } } });
  env = await createTimeSkippingEnv();
  bundle = await workflowBundle();
});

afterAll(async () => {
  await env?.teardown();
});

const businessMetrics = new Set<string>(Object.values(BusinessMetric));

/** The business metric updates since the last call, as plain name, value and labels. */
function drain(): Array<{ name: string; value: number; labels: Record<string, unknown> }> {
  return [...buffer.retrieveUpdates()]
    .filter((u: BufferedMetricUpdate) => businessMetrics.has(u.metric.name))
    .map((u) => ({ name: u.metric.name, value: u.value, labels: { ...u.attributes } }));
}

const activityDefaults: Partial<Activities> = {
  orderEventHandledBy: async () => ({ chain: null }),
  markOrderEventHandled: async () => undefined,
  applyRefunds: async () => ({
    refundedAmount: 0,
    fullyRefunded: false,
    shipmentStatus: null,
    returnReviewRequested: false,
  }),
  notifyWarehouse: async () => ({ shipmentId: 'shp_1', replayed: false }),
  setShipmentStatus: async () => undefined,
  sendOrderConfirmation: async () => ({ sent: true, messageId: '<m@test.local>' }),
  awardLoyaltyPoints: async () => ({ awarded: true, points: 100, balance: 100 }),
  deliverAlert: async () => ({ delivered: true }),
  partnerPauseState: async () => ({ paused: false as const }),
};

/** One order run, fed one first payment, with these activities; settles whatever its end. */
async function runOrder(activities: Partial<Activities>, event: Partial<OrderPaymentEvent> = {}) {
  const taskQueue = `test-${randomUUID()}`;
  const worker = await bundledWorker(env, bundle, taskQueue, {
    ...activityDefaults,
    ...activities,
  });
  await worker.runUntil(async () => {
    const handle = await env.client.workflow.signalWithStart('orderWorkflow', {
      workflowId: `order-12-${randomUUID()}`,
      taskQueue,
      args: [{ orderId: 12 }],
      signal: paymentRecordedSignal,
      signalArgs: [
        { eventId: randomUUID(), paymentId: 7, amount: 5400, firstForOrder: true, ...event },
      ],
      workflowExecutionTimeout: '1 day',
    });
    await handle.result().catch(() => undefined);
  });
}

describe('business metrics of the order workflow', () => {
  it('counts a shipped order and the time since its payment was accepted', async () => {
    drain();
    const paidAt = (await env.currentTimeMs()) - 90_000;
    await runOrder({}, { paidAt });

    const updates = drain();
    expect(updates.filter((u) => u.name === BusinessMetric.fulfilments)).toEqual([
      {
        name: BusinessMetric.fulfilments,
        value: 1,
        labels: expect.objectContaining({ outcome: 'shipped', workflowType: 'orderWorkflow' }),
      },
    ]);
    const latencies = updates.filter((u) => u.name === BusinessMetric.paymentToShipment);
    expect(latencies).toHaveLength(1);
    // 90 s before the run started, plus the few seconds the test server's clock moved since.
    expect(latencies[0]!.value).toBeGreaterThanOrEqual(90);
    expect(latencies[0]!.value).toBeLessThan(100);
    expect(updates.filter((u) => u.name === BusinessMetric.compensations)).toEqual([]);
  });

  it('counts an event handed over without a payment time, measuring nothing', async () => {
    drain();
    await runOrder({});
    const updates = drain();
    expect(updates.map((u) => [u.name, u.labels.outcome])).toEqual([
      [BusinessMetric.fulfilments, 'shipped'],
    ]);
  });

  it('counts a compensated order by the cause and the reason its retries ended on', async () => {
    drain();
    await runOrder({
      notifyWarehouse: async () => {
        throw ApplicationFailure.create({
          type: FailureType.WarehouseRejected,
          message: 'warehouse rejected the shipment request with 400',
          nonRetryable: true,
        });
      },
    });

    const updates = drain();
    expect(updates.map((u) => [u.name, u.value, u.labels])).toEqual(
      expect.arrayContaining([
        [BusinessMetric.fulfilments, 1, expect.objectContaining({ outcome: 'compensated' })],
        [
          BusinessMetric.compensations,
          1,
          expect.objectContaining({ cause: 'WarehouseRejected', reason: 'non_retryable' }),
        ],
      ]),
    );
    expect(updates).toHaveLength(2);
  });

  it('counts an order refunded in full before it shipped as such', async () => {
    drain();
    await runOrder({
      applyRefunds: async () => ({
        refundedAmount: 5400,
        fullyRefunded: true,
        shipmentStatus: null,
        returnReviewRequested: false,
      }),
    });
    expect(drain().map((u) => [u.name, u.labels.outcome])).toEqual([
      [BusinessMetric.fulfilments, 'refunded_before_shipment'],
    ]);
  });
});

describe('the payment hand-over', () => {
  it("carries the payment workflow's start as the time the payment was accepted", async () => {
    const handedOver: OrderPaymentEvent[] = [];
    const taskQueue = `test-${randomUUID()}`;
    const worker = await bundledWorker(env, bundle, taskQueue, {
      recordPayment: async () => ({ paymentId: 7, created: true, firstForOrder: true }),
      handOverToOrder: async (input: { event: OrderPaymentEvent }) => {
        handedOver.push(input.event);
        return { handedOver: true };
      },
    } satisfies Partial<Activities>);
    const input: PaymentWorkflowInput = { eventId: randomUUID(), orderId: 12, amount: 5400 };
    const startTime = await worker.runUntil(async () => {
      const handle = await env.client.workflow.start('paymentWorkflow', {
        workflowId: `payment-${input.eventId}`,
        taskQueue,
        args: [input],
        workflowExecutionTimeout: '1 day',
      });
      await handle.result();
      return (await handle.describe()).startTime;
    });
    expect(handedOver).toEqual([expect.objectContaining({ paidAt: startTime.getTime() })]);
  });
});
