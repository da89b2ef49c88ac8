import { isDeepStrictEqual } from 'node:util';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type {
  ActivityInboundCallsInterceptor,
  ActivityExecuteInput,
  Next,
} from '@temporalio/worker';
import { Context } from '@temporalio/activity';
import { defaultPayloadConverter } from '@temporalio/common';
import type { LightMyRequestResponse } from 'fastify';
import { createLoyaltyRepository } from '../../src/db';
import { paymentWorkflowId } from '../../src/shared/constants';
import { orderWorkflowId } from '../../src/shared/order';
import { refundReviewAlertWorkflowId, type Alert } from '../../src/shared/alert';
import { testDatabases } from '../../harness/databases';
import { eventually } from '../support/eventually';
import { startPaymentStack, type PaymentStack } from '../support/stack';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { deliverWebhook, uniqueEventId } from '../support/webhook';
import { createTestOrder } from '../support/orders';

// Exactly-once effects under concurrency, against a real dev server and worker, on both
// databases: duplicate storms, redelivery after the server forgot the workflow, double
// charges, and per-order serialisation.
let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await createDevServerEnv({ fastDeletion: true });
});
afterAll(async () => {
  await env?.teardown();
});

/** What exactly once means for a paid order: one payment, shipment request, mail and award. */
const ONE_OF_EACH = { payments: 1, warehouseRequests: 1, mails: 1, points: 1 };

/** When each activity ran, and for which order: the evidence for serialisation. */
interface ActivitySpan {
  type: string;
  orderId: number | undefined;
  start: number;
  end: number;
}

describe.each(testDatabases)('exactly-once effects ($name)', ({ name }) => {
  let stack: PaymentStack;
  const spans: ActivitySpan[] = [];

  beforeAll(async () => {
    stack = await startPaymentStack(env, {
      database: name,
      startTimeoutMs: 10_000,
      worker: {
        interceptors: {
          workflowModules: [require.resolve('../../src/workflows/interceptors')],
          activity: [() => ({ inbound: new SpanRecorder(spans) })],
        },
      },
    });
  });
  afterAll(async () => {
    await stack?.close();
  });

  async function newOrder(userId = 1): Promise<number> {
    const order = await createTestOrder(stack.orders, {
      userId,
      customerEmail: `user${userId}@example.com`,
    });
    return order.id;
  }

  const event = (orderId: number, id = uniqueEventId()) => ({
    id,
    event: 'payment.succeeded',
    order_id: orderId,
    amount: 5400,
  });

  /** Waits until the order's workflow has nothing left to do. */
  async function settled(orderId: number): Promise<void> {
    await env.client.workflow.getHandle(orderWorkflowId(orderId)).result();
  }

  /** Executions of a workflow ID the server knows of. */
  async function runsOf(workflowId: string): Promise<number> {
    return (await env.client.workflow.count(`WorkflowId = "${workflowId}"`)).count;
  }

  async function effectsOf(orderId: number) {
    return {
      payments: (await stack.payments.listByOrder(orderId)).length,
      warehouseRequests: stack.warehouse.requests.filter((r) => r.orderId === orderId).length,
      mails: stack.smtp.messages.filter((m) => m.messageId?.startsWith(`<order-${orderId}-`))
        .length,
      points: (await createLoyaltyRepository(stack.db.db).ledgerFor(1)).filter(
        (e) => e.orderId === orderId,
      ).length,
    };
  }

  /** Waits for the payment run of each event, then for the order's; the order's effects. */
  async function effectsOnceDone(orderId: number, ...events: Array<{ id: string }>) {
    for (const e of events) await env.client.workflow.getHandle(paymentWorkflowId(e.id)).result();
    await settled(orderId);
    return effectsOf(orderId);
  }

  it('turns the same event delivered one after another into one execution and one of each effect', async () => {
    const orderId = await newOrder();
    const payload = event(orderId);
    for (let i = 0; i < 5; i++) {
      expect((await deliverWebhook(stack.app, payload)).json()).toEqual({ status: 'accepted' });
    }

    expect(await effectsOnceDone(orderId, payload)).toEqual(ONE_OF_EACH);
    expect(await runsOf(paymentWorkflowId(payload.id))).toBe(1);
  });

  it('answers 1,000 concurrent deliveries of one event with 200 (or 503 and Retry-After) and starts one execution', async () => {
    const orderId = await newOrder();
    const payload = event(orderId);
    const answers = (
      await Promise.all(Array.from({ length: 1000 }, () => deliverWebhook(stack.app, payload)))
    ).map(answerOf);

    // Two answers only: 200 accepted (first delivery or duplicate), or, for a start Temporal did
    // not answer within the start timeout (a loaded machine), 503 with Retry-After, which the
    // provider delivers again. Any other is a defect, shown whole: status, body and headers.
    expect(answers.filter((a) => !isAccepted(a) && !isDeferred(a))).toEqual([]);
    // The provider delivers a deferred one again (the same bytes, as every delivery here), and
    // that is accepted: the run its first start may or may not have made is found or made now.
    if (answers.some(isDeferred)) {
      const again = answerOf(await deliverWebhook(stack.app, payload));
      expect([again].filter((a) => !isAccepted(a))).toEqual([]);
    }
    expect(await effectsOnceDone(orderId, payload)).toEqual(ONE_OF_EACH);
    expect(await runsOf(paymentWorkflowId(payload.id))).toBe(1);
  });

  it('doubles nothing when the event is redelivered after the server forgot the closed run', async () => {
    const orderId = await newOrder();
    const payload = event(orderId);
    await deliverWebhook(stack.app, payload);
    const first = env.client.workflow.getHandle(paymentWorkflowId(payload.id));
    await first.result();
    await settled(orderId);

    // What the namespace's retention does to a closed run, done now.
    await env.client.workflowService.deleteWorkflowExecution({
      namespace: env.namespace ?? 'default',
      workflowExecution: { workflowId: paymentWorkflowId(payload.id) },
    });
    await eventually(
      async () => {
        await expect(first.describe()).rejects.toThrow();
      },
      { timeoutMs: 60_000 },
    );

    expect((await deliverWebhook(stack.app, payload)).json()).toEqual({ status: 'accepted' });
    const second = await env.client.workflow.getHandle(paymentWorkflowId(payload.id)).result();
    expect(second).toMatchObject({ created: false, orderWorkflowId: null });
    expect(await effectsOf(orderId)).toEqual(ONE_OF_EACH);
  });

  it('records both payments of a double charge, fulfils once, and flags the order for refund review', async () => {
    const orderId = await newOrder();
    const [a, b] = [event(orderId), event(orderId)];
    await Promise.all([deliverWebhook(stack.app, a), deliverWebhook(stack.app, b)]);

    expect(await effectsOnceDone(orderId, a, b)).toEqual({ ...ONE_OF_EACH, payments: 2 });
    const order = await stack.orders.findById(orderId);
    expect(order).toMatchObject({ status: 'paid', shipmentStatus: 'requested' });
    expect(order?.refundReviewRequestedAt).not.toBeNull();
    // The API says so too: a double-charged order does not pass for a plain paid one.
    const view = await stack.app.inject({ method: 'GET', url: `/api/v1/orders/${orderId}` });
    expect(view.json()).toMatchObject({
      status: 'paid',
      refund_review_requested_at: order?.refundReviewRequestedAt,
    });
    // One refund-review alert, for whichever payment came second.
    const alerts = await Promise.allSettled(
      [a.id, b.id].map((id) =>
        env.client.workflow.getHandle(refundReviewAlertWorkflowId(orderId, id)).describe(),
      ),
    );
    expect(alerts.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
  });

  it('records a payment that is not the order total without fulfilling; the right payment then fulfils once', async () => {
    const orderId = await newOrder();
    const short = { ...event(orderId), amount: 1 };
    await deliverWebhook(stack.app, short);

    // Recorded (the money was taken), paying nothing: no shipment, mail or points, flagged.
    expect(await effectsOnceDone(orderId, short)).toEqual({
      payments: 1,
      warehouseRequests: 0,
      mails: 0,
      points: 0,
    });
    const orders = stack.orders;
    const flagged = await orders.findById(orderId);
    expect(flagged).toMatchObject({ status: 'pending', shipmentStatus: null });
    expect(flagged?.refundReviewRequestedAt).not.toBeNull();
    const review = env.client.workflow.getHandle(refundReviewAlertWorkflowId(orderId, short.id));
    expect(await review.result()).toMatchObject({
      delivered: false,
      skipped: 'no-sink-configured',
    });
    const started = (await review.fetchHistory()).events![0]!
      .workflowExecutionStartedEventAttributes;
    const alert = defaultPayloadConverter.fromPayload<Alert>(started!.input!.payloads![0]!);
    expect(alert).toMatchObject({ kind: 'refund_review', orderId, failureType: 'AmountMismatch' });

    const full = event(orderId);
    await deliverWebhook(stack.app, full);
    expect(await effectsOnceDone(orderId, full)).toEqual({ ...ONE_OF_EACH, payments: 2 });
    expect(await orders.findById(orderId)).toMatchObject({
      status: 'paid',
      shipmentStatus: 'requested',
    });
  });

  it('never overlaps work on one order, while different orders proceed in parallel', async () => {
    // A warehouse that takes a moment makes overlaps visible if they could happen.
    stack.warehouse.setMode({ kind: 'slow', delayMs: 1_000 }, 1_000);
    spans.length = 0;
    const [x, y] = [await newOrder(), await newOrder()];
    // Order x: three payments at once (one fulfils, two are double charges); order y: one.
    const payloads = [event(x), event(x), event(x), event(y)];
    await Promise.all(payloads.map((p) => deliverWebhook(stack.app, p)));
    await Promise.all(
      payloads.map((p) => env.client.workflow.getHandle(paymentWorkflowId(p.id)).result()),
    );
    await settled(x);
    await settled(y);
    stack.warehouse.setMode({ kind: 'ok' });

    const orderWork = (orderId: number) =>
      spans
        .filter((s) => s.orderId === orderId && ORDER_ACTIVITIES.has(s.type))
        .sort((p, q) => p.start - q.start);
    const xs = orderWork(x);
    expect(xs.map((s) => s.type).filter((t) => t === 'requestRefundReview')).toHaveLength(2);
    for (let i = 1; i < xs.length; i++) {
      expect(xs[i]!.start).toBeGreaterThanOrEqual(xs[i - 1]!.end);
    }
    // Order y's warehouse call ran while order x's did: parallel across orders.
    const callOf = (orderId: number) =>
      orderWork(orderId).find((s) => s.type === 'notifyWarehouse')!;
    const [cx, cy] = [callOf(x), callOf(y)];
    expect(cx.start < cy.end && cy.start < cx.end).toBe(true);
  });
});

/** What a delivery got, whole, so that a failing expectation shows it. */
interface Answer {
  status: number;
  body: unknown;
  headers: LightMyRequestResponse['headers'];
}

function answerOf(response: LightMyRequestResponse): Answer {
  let body: unknown = response.body;
  try {
    body = response.json();
  } catch {
    // Not JSON: the text as received.
  }
  return { status: response.statusCode, body, headers: response.headers };
}

/** Accepted: the first delivery's start, or a duplicate's (the same answer). */
const isAccepted = (a: Answer) =>
  a.status === 200 && isDeepStrictEqual(a.body, { status: 'accepted' });

/** Deferred: 503 with a Retry-After in seconds, so that the provider delivers it again. */
const isDeferred = (a: Answer) =>
  a.status === 503 && /^[1-9][0-9]*$/.test(String(a.headers['retry-after']));

/** The activities that act on an order (as opposed to recording a payment). */
const ORDER_ACTIVITIES = new Set([
  'notifyWarehouse',
  'setShipmentStatus',
  'sendOrderConfirmation',
  'awardLoyaltyPoints',
  'requestRefundReview',
]);

class SpanRecorder implements ActivityInboundCallsInterceptor {
  constructor(private readonly spans: ActivitySpan[]) {}
  async execute(
    input: ActivityExecuteInput,
    next: Next<ActivityInboundCallsInterceptor, 'execute'>,
  ): Promise<unknown> {
    const start = Date.now();
    try {
      return await next(input);
    } finally {
      const arg = input.args[0] as { orderId?: number } | undefined;
      this.spans.push({
        type: Context.current().info.activityType,
        orderId: arg?.orderId,
        start,
        end: Date.now(),
      });
    }
  }
}
