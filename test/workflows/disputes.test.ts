import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { Activities } from '../../src/activities';
import { createAlertActivities } from '../../src/activities/alert-activities';
import { createDisputesRepository, createOrdersRepository } from '../../src/db';
import { disputeAlertWorkflowId } from '../../src/shared/alert';
import {
  disputeOutcome,
  disputeWorkflowId,
  type DisputeEvent,
  type RecordedDispute,
} from '../../src/shared/payment-events';
import type { DisputeWorkflowResult } from '../../src/workflows/dispute';
import { bundledWorker, workflowBundle } from '../support/bundles';
import { testDatabases } from '../../harness/databases';
import { createTestOrder } from '../support/orders';
import { useOrderWorker, useTimeSkippingStack } from '../support/time-skipping-stack';
import type { disputeWorkflow } from '../../src/workflows';

// Issue 25, point 1: a dispute opened raises one alert per dispute, with its evidence deadline
// and the Web UI link, however many events report it; a closure raises none.
const stack = useTimeSkippingStack({ partners: true, sink: true });

it('alerts once per opened dispute, with the evidence deadline and the Web UI link', async () => {
  const taskQueue = `disputes-${randomUUID()}`;
  const worker = await bundledWorker(stack.env, await workflowBundle(), taskQueue, {
    ...createAlertActivities({
      alertWebhookUrl: stack.sink.url,
      temporalUiUrl: 'http://localhost:8233',
    }),
    // Its payment is not recorded: the dispute is kept, and nothing is handed to an order.
    recordDispute: async () => ({ created: true, orderId: null }),
  } satisfies Partial<Activities>);
  const disputeId = `dp_${randomUUID()}`;
  const event = (status: DisputeEvent['status']): DisputeEvent => ({
    eventId: `stripe~evt_${randomUUID()}`,
    paymentRef: 'stripe~pi_1',
    disputeId,
    amount: 5400,
    status,
    evidenceDueBy: '2026-12-20T23:59:59.000Z',
    orderId: 12,
  });
  const results = await worker.runUntil(async () => {
    const all: DisputeWorkflowResult[] = [];
    for (const status of ['opened', 'opened', 'won'] as const) {
      const e = event(status);
      all.push(
        await stack.env.client.workflow.execute<typeof disputeWorkflow>('disputeWorkflow', {
          taskQueue,
          workflowId: disputeWorkflowId(e.eventId),
          args: [e],
          workflowExecutionTimeout: '1 hour',
        }),
      );
    }
    await stack.env.client.workflow.getHandle(disputeAlertWorkflowId(disputeId)).result();
    return all;
  });

  expect(results.map((r) => r.alerted)).toEqual([true, false, false]);
  const alerts = stack.sink.received.filter((r) => String(r.body.text).includes(disputeId));
  expect(alerts).toHaveLength(1);
  expect(alerts[0]!.body.text).toContain('evidence due by 2026-12-20T23:59:59.000Z');
  expect(alerts[0]!.body.alert).toMatchObject({
    kind: 'dispute',
    order_id: 12,
    web_ui_url: expect.stringContaining('/workflows/dispute-'),
  });
});

it('raises no alert for a closure that comes alone, and names payment, dispute, amount and reason', async () => {
  const taskQueue = `disputes-${randomUUID()}`;
  const worker = await bundledWorker(stack.env, await workflowBundle(), taskQueue, {
    ...createAlertActivities({ alertWebhookUrl: stack.sink.url, temporalUiUrl: undefined }),
    recordDispute: async () => ({ created: true, orderId: null }),
  } satisfies Partial<Activities>);
  const [closedOnly, opened] = [`dp_${randomUUID()}`, `dp_${randomUUID()}`];
  const event = (disputeId: string, status: DisputeEvent['status']): DisputeEvent => ({
    eventId: `stripe~evt_${randomUUID()}`,
    paymentRef: 'stripe~pi_2',
    disputeId,
    amount: 1200,
    status,
    reason: 'fraudulent',
  });
  const run = (e: DisputeEvent) =>
    stack.env.client.workflow.execute<typeof disputeWorkflow>('disputeWorkflow', {
      taskQueue,
      workflowId: disputeWorkflowId(e.eventId),
      args: [e],
      workflowExecutionTimeout: '1 hour',
    });
  await worker.runUntil(async () => {
    // A closure before (or without) its opening: recorded for the order, nobody to alert.
    expect(await run(event(closedOnly, 'won'))).toMatchObject({ alerted: false });
    expect(await run(event(opened, 'opened'))).toMatchObject({ alerted: true });
    await stack.env.client.workflow.getHandle(disputeAlertWorkflowId(opened)).result();
  });
  expect(stack.sink.received.filter((r) => String(r.body.text).includes(closedOnly))).toHaveLength(
    0,
  );
  const [alert] = stack.sink.received.filter((r) => String(r.body.text).includes(opened));
  // No evidence deadline in the event: none in the text either.
  expect(alert!.body.text).toContain(
    `payment stripe~pi_2 is disputed (${opened}, amount 1200, fraudulent)`,
  );
  expect(alert!.body.text).not.toContain('evidence due by');
  expect(alert!.body.alert).toMatchObject({ order_id: null });
});

describe('disputeOutcome', () => {
  const at = (n: number) => `2026-12-0${n}T00:00:00.000Z`;
  it('is the same for any arrival order and duplication of the same dispute events', () => {
    const events: RecordedDispute[] = [
      { disputeId: 'dp_1', status: 'opened', recordedAt: at(1) },
      { disputeId: 'dp_1', status: 'lost', recordedAt: at(3) },
      { disputeId: 'dp_2', status: 'opened', recordedAt: at(2) },
      { disputeId: 'dp_2', status: 'won', recordedAt: at(4) },
    ];
    fc.assert(
      fc.property(
        fc.shuffledSubarray(events, { minLength: 4, maxLength: 4 }),
        fc.nat(3),
        (order, d) => {
          expect(disputeOutcome([...order, order[d]!])).toEqual({
            status: 'lost',
            closedAt: at(4),
          });
        },
      ),
    );
  });

  it('says opened while any dispute is open, won when all were won, null with none', () => {
    expect(disputeOutcome([])).toEqual({ status: null, closedAt: null });
    expect(
      disputeOutcome([
        { disputeId: 'dp_1', status: 'won', recordedAt: at(2) },
        { disputeId: 'dp_2', status: 'opened', recordedAt: at(1) },
      ]),
    ).toEqual({ status: 'opened', closedAt: null });
    expect(
      disputeOutcome([
        { disputeId: 'dp_1', status: 'won', recordedAt: at(2) },
        { disputeId: 'dp_1', status: 'opened', recordedAt: at(3) },
      ]),
    ).toEqual({ status: 'won', closedAt: at(2) });
  });
});

// Recorded once by event ID, matched through the payment's reference, applied in the order's
// workflow in any arrival order: the real workflows and activities, on SQLite and PostgreSQL.
describe.each(testDatabases)('disputes through the order workflow ($name)', ({ name, create }) => {
  const worker = useOrderWorker(stack, { name, create }, { queue: 'disputes' });
  const { taskQueue, orderResult } = worker;
  const pay = (orderId: number, paymentRef: string) =>
    worker.pay({ orderId, eventId: `evt_${randomUUID()}`, paymentRef });
  const dispute = (event: DisputeEvent): Promise<DisputeWorkflowResult> =>
    stack.env.client.workflow.execute<typeof disputeWorkflow>('disputeWorkflow', {
      taskQueue,
      workflowId: disputeWorkflowId(event.eventId),
      args: [event],
      workflowExecutionTimeout: '1 hour',
    });
  const disputeEvent = (
    paymentRef: string,
    disputeId: string,
    status: DisputeEvent['status'],
  ): DisputeEvent => ({
    eventId: `stripe~evt_${randomUUID()}`,
    paymentRef,
    disputeId,
    amount: 5400,
    status,
    evidenceDueBy: '2026-12-20T23:59:59.000Z',
  });
  const rows = (orderId: number) =>
    worker.db.db.selectFrom('disputes').selectAll().where('order_id', '=', orderId).execute();

  it.each([
    ['opened, then lost', ['opened', 'lost']],
    ['lost, then opened (out of order)', ['lost', 'opened']],
  ] as const)('records %s once each and ends lost on the order', async (_, statuses) => {
    const orders = createOrdersRepository(worker.db.db);
    const order = await createTestOrder(orders);
    const paymentRef = `stripe~pi_${randomUUID()}`;
    await pay(order.id, paymentRef);
    await orderResult(order.id);
    const disputeId = `dp_${randomUUID()}`;
    const events = statuses.map((s) => disputeEvent(paymentRef, disputeId, s));
    for (const event of events) {
      // (orderWorkflowId is null instead when a retried hand-over found the event handled.)
      expect(await dispute(event)).toMatchObject({ orderId: order.id });
      await orderResult(order.id);
      expect(await createDisputesRepository(worker.db.db).handledBy(event.eventId)).toEqual(
        expect.any(String),
      );
    }
    // A redelivery of the first event: recorded already, already handled by the order.
    expect(await dispute(events[0]!)).toMatchObject({ orderId: order.id, orderWorkflowId: null });

    expect(await rows(order.id)).toHaveLength(2);
    const closure = (await rows(order.id)).find((r) => r.status === 'lost')!;
    expect(await orders.findById(order.id)).toMatchObject({
      status: 'paid',
      disputeStatus: 'lost',
      disputeClosedAt: closure.recorded_at,
    });
    // One alert for the dispute, started by whichever run saw it opened.
    await stack.env.client.workflow.getHandle(disputeAlertWorkflowId(disputeId)).result();
  });

  it('keeps a dispute that comes before its payment, and applies it when the payment arrives', async () => {
    const orders = createOrdersRepository(worker.db.db);
    const order = await createTestOrder(orders);
    const paymentRef = `stripe~pi_${randomUUID()}`;
    const event = disputeEvent(paymentRef, `dp_${randomUUID()}`, 'opened');
    expect(await dispute(event)).toEqual({ alerted: true, orderId: null, orderWorkflowId: null });
    expect(await orders.findById(order.id)).toMatchObject({ disputeStatus: null });

    await pay(order.id, paymentRef);
    expect((await orderResult(order.id)).processed.map((p) => p.outcome)).toEqual(['fulfilled']);
    expect(await orders.findById(order.id)).toMatchObject({
      disputeStatus: 'opened',
      disputeClosedAt: null,
    });
    expect(await rows(order.id)).toHaveLength(1);
  });
});
