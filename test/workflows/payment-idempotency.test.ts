import { randomUUID } from 'node:crypto';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createActivities } from '../../src/activities';
import {
  createLoyaltyRepository,
  createOrdersRepository,
  createPaymentsRepository,
  type DatabaseHandle,
} from '../../src/db';
import { orderWorkflowId, type OrderWorkflowResult } from '../../src/shared/order';
import { paymentWorkflow } from '../../src/workflows';
import type { PaymentRecordedResult } from '../../src/shared/payment';
import { testDatabases } from '../../harness/databases';
import { createTimeSkippingEnv } from '../../harness/temporal/test-env';
import { testActivityDeps } from '../../harness/activity-deps';
import { bundledWorker, workflowBundle } from '../support/bundles';
import { startPartners, type Partners } from '../support/stack';
import { createTestOrder } from '../support/orders';

// The seed's idempotency test, end to end through Temporal: the same payment event processed
// twice gives one payment row AND exactly one warehouse notification. The second assertion is
// the one that matters: the unique constraint alone keeps one row, but only the record of which
// order run finished with the event stops the second hand-over from notifying the warehouse
// again.
let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;
let partners: Partners;

beforeAll(async () => {
  env = await createTimeSkippingEnv();
  bundle = await workflowBundle({ interceptorModules: [] });
  partners = await startPartners();
});

afterAll(async () => {
  await partners?.close();
  await env?.teardown();
});

describe.each(testDatabases)('processing the same payment event twice ($name)', ({ create }) => {
  let db: DatabaseHandle;
  beforeEach(async () => {
    db = await create();
    partners.warehouse.reset();
    partners.smtp.reset();
  });
  afterEach(async () => {
    await db.close();
  });

  it('records one payment and notifies the warehouse exactly once', async () => {
    const orders = createOrdersRepository(db.db);
    const payments = createPaymentsRepository(db.db);
    const created = await createTestOrder(orders, { customerEmail: 'a@example.com' });
    const orderId = created.id;
    const taskQueue = `test-${randomUUID()}`;
    const activities = createActivities({
      ...testActivityDeps(db, partners),
      client: env.client,
    });
    // The hand-overs themselves: the order workflow's de-duplication would hide a second one
    // from every effect below, so count them where they leave the payment workflow.
    const handOvers: Array<Parameters<typeof activities.handOverToOrder>[0]> = [];
    const handOverResults: Array<Awaited<ReturnType<typeof activities.handOverToOrder>>> = [];
    const worker = await bundledWorker(env, bundle, taskQueue, {
      ...activities,
      handOverToOrder: async (input: Parameters<typeof activities.handOverToOrder>[0]) => {
        handOvers.push(input);
        const result = await activities.handOverToOrder(input);
        handOverResults.push(result);
        return result;
      },
    });
    const input = { eventId: `evt_${randomUUID()}`, orderId, amount: 5400 };

    // Two executions of the same event, one after the other: what a redelivery looks like once
    // the first run is gone from Temporal (for example past the namespace's retention).
    const [first, second, orderRun] = await worker.runUntil(async () => {
      const a = await env.client.workflow.execute(paymentWorkflow, {
        taskQueue,
        workflowId: `first-${input.eventId}`,
        args: [input],
        workflowExecutionTimeout: '1 hour',
      });
      // The order's own workflow does the fulfilment: wait for it to finish, as it has long
      // before a redelivery past the retention.
      const order: OrderWorkflowResult = await env.client.workflow
        .getHandle(orderWorkflowId(orderId))
        .result();
      const b = await env.client.workflow.execute(paymentWorkflow, {
        taskQueue,
        workflowId: `second-${input.eventId}`,
        args: [input],
        workflowExecutionTimeout: '1 hour',
      });
      return [a, b, order] as const;
    });

    // The unique constraint keeps one row whatever the workflow does...
    expect(await payments.listByOrder(orderId)).toHaveLength(1);
    // ...and only the record of the order run that handled it keeps the warehouse from being
    // told twice.
    expect(partners.warehouse.requests.filter((r) => r.orderId === orderId)).toHaveLength(1);
    expect(first).toMatchObject({ created: true, orderWorkflowId: orderWorkflowId(orderId) });
    expect(second).toMatchObject({
      created: false,
      orderWorkflowId: null,
      paymentId: (first as PaymentRecordedResult).paymentId,
    });
    expect((await orders.findById(orderId))?.refundReviewRequestedAt).toBeNull();
    expect((await orders.findById(orderId))?.shipmentStatus).toBe('requested');
    // The effects, not only the flag: one hand-over, one event processed by the order, one
    // confirmation mail, one ledger entry.
    // The second execution hands over too (it cannot know whether the first one's hand-over
    // arrived), and its hand-over finds the event handled: no signal, no second order run.
    const handOver = {
      orderId,
      event: expect.objectContaining({
        eventId: input.eventId,
        paymentId: (first as PaymentRecordedResult).paymentId,
      }),
    };
    expect(handOvers).toEqual([handOver, handOver]);
    expect(handOverResults).toEqual([{ handedOver: true }, { handedOver: false }]);
    expect(orderRun.processed).toEqual([{ eventId: input.eventId, outcome: 'fulfilled' }]);
    expect(partners.smtp.messages).toHaveLength(1);
    expect(await createLoyaltyRepository(db.db).ledgerFor(1)).toHaveLength(1);
  });
  it('still fulfils the order when the attempt that committed the payment died before reporting', async () => {
    const orders = createOrdersRepository(db.db);
    const order = await createTestOrder(orders, { customerEmail: 'a@example.com' });
    const activities = createActivities({
      ...testActivityDeps(db, partners),
      client: env.client,
    });
    let attempts = 0;
    const taskQueue = `test-${randomUUID()}`;
    const worker = await bundledWorker(env, bundle, taskQueue, {
      ...activities,
      // The crash window: the row is committed, then the attempt is lost before it reports.
      recordPayment: async (input: Parameters<typeof activities.recordPayment>[0]) => {
        attempts += 1;
        const result = await activities.recordPayment(input);
        if (attempts === 1) throw new Error('worker died after the commit');
        return result;
      },
    });
    const input = { eventId: `evt_${randomUUID()}`, orderId: order.id, amount: 5400 };
    const result = await worker.runUntil(async () => {
      const r = await env.client.workflow.execute(paymentWorkflow, {
        taskQueue,
        workflowId: `crash-${input.eventId}`,
        args: [input],
        workflowExecutionTimeout: '1 hour',
      });
      await env.client.workflow.getHandle(orderWorkflowId(order.id)).result();
      return r;
    });

    expect(attempts).toBe(2);
    expect(result).toMatchObject({ created: true, orderWorkflowId: orderWorkflowId(order.id) });
    expect(partners.warehouse.requests.filter((r) => r.orderId === order.id)).toHaveLength(1);
    expect((await orders.findById(order.id))?.shipmentStatus).toBe('requested');
  });
});
