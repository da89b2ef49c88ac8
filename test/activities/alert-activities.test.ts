import { createServer, type IncomingMessage, type Server } from 'node:http';
import { ApplicationFailure, ApplicationFailureCategory } from '@temporalio/common';
import { msToNumber } from '@temporalio/common/lib/time';
import { MockActivityEnvironment } from '@temporalio/testing';
import { alertPayload, createAlertActivities } from '../../src/activities/alert-activities';
import {
  failureAlertWorkflowId,
  refundReviewAlertWorkflowId,
  type Alert,
} from '../../src/shared/alert';
import { FailureType } from '../../src/shared/errors';
import { rejectionOf } from '../support/failures';

// deliverAlert against a local HTTP sink: what a Slack-compatible receiver gets, and how each
// answer is classified for the retry policy.
interface Received {
  headers: IncomingMessage['headers'];
  body: { text: string; alert: Record<string, unknown> };
}
let sink: Server;
let sinkUrl: string;
let received: Received[];
let answer: { status: number; headers?: Record<string, string> };

beforeAll(async () => {
  sink = createServer((req, res) => {
    let raw = '';
    req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
    req.on('end', () => {
      received.push({ headers: req.headers, body: JSON.parse(raw) as Received['body'] });
      res.writeHead(answer.status, answer.headers).end('ok');
    });
  });
  await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
  sinkUrl = `http://127.0.0.1:${(sink.address() as { port: number }).port}/hooks/alerts`;
});
afterAll(async () => {
  await new Promise((resolve) => sink.close(resolve));
});
beforeEach(() => {
  received = [];
  answer = { status: 200 };
});

const alert: Alert = {
  kind: 'workflow_failed',
  namespace: 'default',
  workflowType: 'paymentWorkflow',
  workflowId: 'payment-evt_1',
  runId: 'run-1',
  taskQueue: 'payments',
  orderId: 12,
  failureType: FailureType.FulfilmentFailed,
  failureMessage: 'order 12 could not be handed to the warehouse',
  rootCauseType: FailureType.WarehouseUnavailable,
  rootCauseMessage: 'warehouse answered 503',
  attempts: 5,
  failedAt: '2026-11-29T12:00:00.000Z',
};

/** Delivers `what` as its alert workflow (`alertWorkflowId`) does. */
/** `alert`'s run and failure, as the webhook's JSON names them. */
const alertFields = {
  namespace: 'default',
  workflow_type: 'paymentWorkflow',
  workflow_id: 'payment-evt_1',
  run_id: 'run-1',
  task_queue: 'payments',
  order_id: 12,
  failure_type: 'FulfilmentFailed',
  failure_message: 'order 12 could not be handed to the warehouse',
  root_cause_type: 'WarehouseUnavailable',
  root_cause_message: 'warehouse answered 503',
  attempts: 5,
  failed_at: '2026-11-29T12:00:00.000Z',
};

const deliver = (
  alertWebhookUrl: string | undefined,
  what: Alert = alert,
  alertWorkflowId = failureAlertWorkflowId(what.workflowId, what.runId),
) => {
  const activities = createAlertActivities({
    alertWebhookUrl,
    temporalUiUrl: 'http://localhost:8233/',
  });
  return new MockActivityEnvironment({
    workflowExecution: { workflowId: alertWorkflowId, runId: 'alert-run' },
  }).run((a: Alert) => activities.deliverAlert(a), what);
};

const failureOf = (promise: Promise<unknown>) => rejectionOf(promise, ApplicationFailure);

/** The stamps of alert_deliveries, in memory. */
function stampsInMemory() {
  const keys = new Set<string>();
  return {
    keys,
    wasDelivered: (key: string) => Promise.resolve(keys.has(key)),
    markDelivered: (key: string) => Promise.resolve(!keys.has(key) && Boolean(keys.add(key))),
  };
}

describe('deliverAlert with delivery stamps', () => {
  const stamped = (deliveries: ReturnType<typeof stampsInMemory>) => {
    const activities = createAlertActivities({
      alertWebhookUrl: sinkUrl,
      temporalUiUrl: undefined,
      deliveries,
    });
    return new MockActivityEnvironment({
      workflowExecution: { workflowId: 'alert-payment-evt_1-run-1', runId: 'alert-run' },
    }).run((a: Alert) => activities.deliverAlert(a), alert);
  };

  it('stamps the alert workflow after the sink accepted, and a retry then posts nothing', async () => {
    const deliveries = stampsInMemory();
    await expect(stamped(deliveries)).resolves.toEqual({ delivered: true });
    expect([...deliveries.keys]).toEqual(['alert-payment-evt_1-run-1']);
    await expect(stamped(deliveries)).resolves.toEqual({
      delivered: true,
      skipped: 'already-delivered',
    });
    expect(received).toHaveLength(1);
  });

  it('stamps nothing when the sink refused, so the retry posts again', async () => {
    const deliveries = stampsInMemory();
    answer = { status: 503 };
    await failureOf(stamped(deliveries));
    expect(deliveries.keys.size).toBe(0);
    answer = { status: 200 };
    await expect(stamped(deliveries)).resolves.toEqual({ delivered: true });
    expect(received).toHaveLength(2);
  });
});

describe('deliverAlert', () => {
  it('keys each alert by its alert workflow, so two alerts of one run never share a key', async () => {
    // Two refund reviews raised by one order run: same workflow and run, different alerts.
    const review = (eventId: string): Alert => ({
      ...alert,
      kind: 'refund_review',
      workflowType: 'orderWorkflow',
      workflowId: 'order-12',
      runId: 'order-run-1',
      failureType: 'DoubleCharge',
      failureMessage: `order 12 was paid again by event ${eventId}`,
    });
    for (const eventId of ['evt_2', 'evt_3']) {
      await deliver(sinkUrl, review(eventId), refundReviewAlertWorkflowId(12, eventId));
    }
    await deliver(sinkUrl, { ...alert, workflowId: 'order-12', runId: 'order-run-1' });
    expect(received.map((r) => r.headers['idempotency-key'])).toEqual([
      refundReviewAlertWorkflowId(12, 'evt_2'),
      refundReviewAlertWorkflowId(12, 'evt_3'),
      failureAlertWorkflowId('order-12', 'order-run-1'),
    ]);
  });

  it('POSTs Slack-compatible JSON with every field and a Web UI link', async () => {
    await expect(deliver(sinkUrl)).resolves.toEqual({ delivered: true });

    expect(received).toHaveLength(1);
    const [{ headers, body }] = received as [Received];
    expect(headers['content-type']).toBe('application/json');
    expect(headers['idempotency-key']).toBe('alert-payment-evt_1-run-1');
    const link = 'http://localhost:8233/namespaces/default/workflows/payment-evt_1/run-1/history';
    expect(body.text).toContain(
      'paymentWorkflow payment-evt_1 (order 12) failed after 5 attempt(s)',
    );
    expect(body.text).toContain(`<${link}|Open in Temporal Web UI>`);
    // The root cause is in the text, not only in the structured fields.
    expect(body.text).toContain('Cause: WarehouseUnavailable: warehouse answered 503');
    expect(body.alert).toEqual({
      command: null,
      kind: 'workflow_failed',
      ...alertFields,
      web_ui_url: link,
    });
  });

  it('sends nothing when no sink is configured (the alert workflow still logs it)', async () => {
    await expect(deliver(undefined)).resolves.toEqual({
      delivered: false,
      skipped: 'no-sink-configured',
    });
    expect(received).toHaveLength(0);
  });

  it('reports a 429 as rate-limited, waiting its Retry-After as a benign failure', async () => {
    answer = { status: 429, headers: { 'retry-after': '30' } };
    const failure = await failureOf(deliver(sinkUrl));
    expect(failure.type).toBe(FailureType.AlertSinkRateLimited);
    expect(failure.details?.[0]).toEqual({ retryAfterMs: 30_000, attempts: 1 });
    expect(msToNumber(failure.nextRetryDelay ?? 0)).toBe(30_000);
    expect(failure.category).toBe(ApplicationFailureCategory.BENIGN);
  });

  it('reports a 5xx as unavailable and a 4xx as rejected for good', async () => {
    answer = { status: 503 };
    expect(await failureOf(deliver(sinkUrl))).toMatchObject({
      type: FailureType.AlertSinkUnavailable,
      nonRetryable: false,
    });
    answer = { status: 404 };
    expect(await failureOf(deliver(sinkUrl))).toMatchObject({
      type: FailureType.AlertSinkRejected,
      nonRetryable: true,
    });
  });
});

describe('alertPayload', () => {
  it("names a digest's and an SLA check's fields in snake_case, and an unset resolution null", () => {
    const digest = {
      cause: 'FulfilmentFailed',
      since: '2026-11-29T12:00:00.000Z',
      failures: 3,
      newFailures: 2,
      orderIds: [12, 13],
      moreOrders: 1,
      stillFailed: null,
    };
    expect(
      alertPayload({ ...alert, kind: 'failures_digest', digest }, undefined).alert,
    ).toMatchObject({
      web_ui_url: null,
      command: null,
      digest: {
        cause: 'FulfilmentFailed',
        since: '2026-11-29T12:00:00.000Z',
        failures: 3,
        new_failures: 2,
        order_ids: [12, 13],
        more_orders: 1,
        still_failed: null,
        resolved_by: null,
      },
    });
    const sla = {
      cause: 'FulfilmentSlaBreached' as const,
      checkedAt: '2026-11-29T12:05:00.000Z',
      slaSeconds: 600,
      count: 4,
      orderIds: [12],
      workflowIds: ['order-12'],
      pausedPartners: ['warehouse'],
    };
    const payload = alertPayload(
      { ...alert, kind: 'sla_breached', command: 'npm run ops -- stuck', sla },
      undefined,
    );
    expect(payload.alert).toEqual({
      kind: 'sla_breached',
      ...alertFields,
      web_ui_url: null,
      command: 'npm run ops -- stuck',
      sla: {
        cause: 'FulfilmentSlaBreached',
        checked_at: '2026-11-29T12:05:00.000Z',
        sla_seconds: 600,
        count: 4,
        order_ids: [12],
        workflow_ids: ['order-12'],
        paused_partners: ['warehouse'],
      },
    });
    expect(payload.text).toContain('Run: `npm run ops -- stuck`');
  });
});
