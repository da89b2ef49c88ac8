import { WorkflowFailedError } from '@temporalio/client';
import { retryFailedWorkflow } from '../../src/operator/retry';
import { failureAlertWorkflowId, refundReviewAlertWorkflowId } from '../../src/shared/alert';
import { paymentWorkflowId } from '../../src/shared/constants';
import { orderStateQuery, orderWorkflowId } from '../../src/shared/order';
import { startAlertSink, type AlertSink } from '../operations/helpers';
import { eventually } from '../support/eventually';
import { failureAlertWorkflows } from '../support/failure-alerts';
import { paymentStackForTests } from '../support/dev-server-for-tests';
import { uniqueEventId } from '../support/webhook';

// Issue 9, point 4, over real sockets: a fulfilment gives up (the warehouse answers 503, then
// 400) while a second payment for the same order waits in the order's workflow. The second
// payment is still recorded and flagged, the order is failed, alerted once, Failed in Temporal,
// and `ops retry` (its library function) fulfils it once the warehouse is healthy again.

let sink: AlertSink;
// The sink starts first, for the worker's settings to name it, and stops last.
beforeAll(async () => {
  sink = await startAlertSink();
});
const live = paymentStackForTests(() => ({
  settings: { ALERT_WEBHOOK_URL: sink.url },
  listen: true,
}));
afterAll(async () => {
  await sink?.close();
});

const http = (path: string, init?: RequestInit) => live.stack.http(path, init);

/** The provider's delivery: the raw JSON, signed with the shared secret. */
function deliverPayment(orderId: number, eventId: string) {
  return live.stack.deliver({
    id: eventId,
    event: 'payment.succeeded',
    order_id: orderId,
    amount: 5400,
  });
}

/** Alerts the sink received about one workflow, by kind. */
function alertsFor(workflowId: string, kind: 'failures_opened' | 'refund_review') {
  return sink.received.filter(
    (r) => r.body.alert.workflow_id === workflowId && r.body.alert.kind === kind,
  );
}

describe('a fulfilment that gives up while a second payment for the order waits (HTTP, dev server)', () => {
  it('fails the order once, still flags the double charge, and ops retry fulfils it once', async () => {
    const created = await http('/api/v1/orders', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': uniqueEventId('order') },
      body: JSON.stringify({ user_id: 1, customer_email: 'buyer@example.com', total_amount: 5400 }),
    });
    expect(created.status).toBe(201);
    const orderId = created.body.id as number;
    const workflowId = orderWorkflowId(orderId);
    const order = live.env.client.workflow.getHandle(workflowId);

    // The warehouse is down: the first attempt gets 503, and the server waits 10 s to retry.
    live.stack.warehouse.setMode({ kind: 'unavailable', status: 503 });
    const first = uniqueEventId();
    expect(await deliverPayment(orderId, first)).toEqual({
      status: 200,
      body: { status: 'accepted' },
    });
    await eventually(
      async () => {
        const { raw } = await order.describe();
        expect(raw.pendingActivities).toEqual([
          expect.objectContaining({ activityType: { name: 'notifyWarehouse' }, attempt: 2 }),
        ]);
      },
      { timeoutMs: 30_000, intervalMs: 200 },
    );

    // Meanwhile the provider charges the order a second time.
    const second = uniqueEventId();
    expect(await deliverPayment(orderId, second)).toEqual({
      status: 200,
      body: { status: 'accepted' },
    });
    await live.env.client.workflow.getHandle(paymentWorkflowId(second)).result();
    expect(await order.query(orderStateQuery)).toMatchObject({
      current: first,
      pending: [second],
    });

    // Then the warehouse refuses the order for good: the next attempt gives up.
    live.stack.warehouse.setMode({ kind: 'reject', status: 400 });
    await expect(order.result()).rejects.toBeInstanceOf(WorkflowFailedError);
    const failedRun = await order.describe();
    expect(failedRun.status.name).toBe('FAILED');
    expect(
      live.stack.warehouse.requests.filter((r) => r.orderId === orderId).map((r) => r.status),
    ).toEqual([503, 400]);

    // The order: compensated, both payments recorded, flagged for a refund review.
    const afterFailure = await http(`/api/v1/orders/${orderId}`);
    expect(afterFailure.body).toMatchObject({ status: 'paid', shipment_status: 'failed' });
    expect(afterFailure.body.refund_review_requested_at).toEqual(expect.any(String));
    expect(
      (afterFailure.body.payments as Array<{ provider_event_id: string }>)
        .map((p) => p.provider_event_id)
        .sort(),
    ).toEqual([first, second].sort());

    // Failed where an operator looks (the Web UI's list runs this query), and alerted once.
    await eventually(async () => {
      const failed = await live.env.client.workflow.count(
        `WorkflowId = "${workflowId}" AND ExecutionStatus = "Failed"`,
      );
      expect(failed.count).toBe(1);
    });
    await live.env.client.workflow
      .getHandle(failureAlertWorkflowId(workflowId, failedRun.runId))
      .result();
    const refundReview = live.env.client.workflow.getHandle(
      refundReviewAlertWorkflowId(orderId, second),
    );
    await refundReview.result();
    const refundReviewRunId = (await refundReview.describe()).runId;
    // The failure is the first of its cause here: its digest's "opened" post names the run.
    await eventually(() => expect(alertsFor(workflowId, 'failures_opened')).toHaveLength(1));
    expect(alertsFor(workflowId, 'failures_opened')[0]!.body.alert).toMatchObject({
      run_id: failedRun.runId,
      order_id: orderId,
    });
    expect(alertsFor(workflowId, 'refund_review')).toHaveLength(1);

    // The warehouse is healthy again; the operator retries the order.
    live.stack.warehouse.setMode({ kind: 'ok' });
    const retried = await retryFailedWorkflow(live.env.client, workflowId, { reason: 'e2e test' });
    expect(retried.failedRunId).toBe(failedRun.runId);
    await live.env.client.workflow.getHandle(workflowId, retried.newRunId).result();

    const shipments = [...live.stack.warehouse.shipments.values()].filter(
      (s) => s.orderId === orderId,
    );
    expect(shipments).toHaveLength(1);
    expect((await http(`/api/v1/orders/${orderId}`)).body).toMatchObject({
      status: 'paid',
      shipment_status: 'requested',
    });
    // The new run handled the double charge again, idempotently: no second alert of either kind.
    expect((await refundReview.describe()).runId).toBe(refundReviewRunId);
    expect(alertsFor(workflowId, 'refund_review')).toHaveLength(1);
    expect(alertsFor(workflowId, 'failures_opened')).toHaveLength(1);
    expect(await failureAlertWorkflows(live.env.client, workflowId)).toHaveLength(1);
  }, 120_000);
});
