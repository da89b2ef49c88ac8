import type { FastifyInstance } from 'fastify';
import { buildAdminApp } from '../../src/http/admin';
import { createHttpMetrics, type HttpMetrics } from '../../src/http/metrics';
import { createLogger } from '../../src/logger';
import { TemporalUnavailableError } from '../../src/temporal/payment-starter';
import {
  buildWebhookApp,
  deliverWebhook,
  paymentEvent,
  recordingPaymentStarter,
  recordingUnmatched,
} from '../support/webhook';
import {
  deliverStandard,
  standardHeaders,
  standardPaymentEvent,
  TEST_STANDARD_SECRET,
} from '../support/providers';

// The public app counts webhook deliveries by outcome, with their latency; GET /metrics of the
// admin app (the admin listener) serves them.
describe('HTTP metrics', () => {
  let app: FastifyInstance;
  let metrics: HttpMetrics;

  beforeEach(() => {
    metrics = createHttpMetrics();
  });
  afterEach(async () => {
    await app?.close();
  });

  async function scrape(): Promise<string> {
    const admin = await buildAdminApp({ logger: createLogger({ LOG_LEVEL: 'silent' }), metrics });
    const response = await admin.inject({ method: 'GET', url: '/metrics' });
    await admin.close();
    expect(response.statusCode).toBe(200);
    expect(response.headers['content-type']).toContain('text/plain');
    return response.body;
  }

  function sample(text: string, name: string, labels: string): number | undefined {
    const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}}`));
    return line === undefined ? undefined : Number(line.split(' ').at(-1));
  }

  it('counts a delivery kept in the unmatched inbox as unmatched, and refunds like payments', async () => {
    app = await buildWebhookApp({
      payments: recordingPaymentStarter(),
      unmatchedRepository: recordingUnmatched(),
      metrics,
      config: { STANDARD_WEBHOOK_SECRETS: [TEST_STANDARD_SECRET], SHOP_CURRENCY: 'jpy' },
    });
    const send = (event: object, id: string) => {
      const payload = JSON.stringify(event);
      return deliverStandard(app, payload, standardHeaders(payload, { id }));
    };
    await send(standardPaymentEvent({ currency: 'eur' }), 'msg_m1'); // unmatched
    await send(standardPaymentEvent({ currency: 'eur' }), 'msg_m1'); // unmatched again
    const refund = {
      type: 'payment.refunded',
      data: { payment_id: 'p1', amount: 100, refund_id: 'r1' },
    };
    await send(refund, 'msg_m2'); // accepted
    await send(refund, 'msg_m2'); // duplicate

    const text = await scrape();
    const deliveries = 'order_payments_webhook_deliveries_total';
    expect(sample(text, deliveries, 'outcome="unmatched"')).toBe(2);
    expect(sample(text, deliveries, 'outcome="accepted"')).toBe(1);
    expect(sample(text, deliveries, 'outcome="duplicate"')).toBe(1);
    expect(sample(text, deliveries, 'outcome="ignored"')).toBeUndefined();
  });

  it('counts a duplicate of a payment its workflow kept as unmatched (unknown order) as unmatched', async () => {
    const inbox = recordingUnmatched();
    app = await buildWebhookApp({
      payments: recordingPaymentStarter(),
      unmatchedRepository: inbox,
      metrics,
    });
    const event = paymentEvent();
    await deliverWebhook(app, event); // accepted: the workflow then finds no order
    inbox.entries.push({
      reason: 'unknown_order',
      provider: 'payment',
      eventId: event.id,
      payload: {},
    });
    await deliverWebhook(app, event); // the provider's retry: counted in the inbox

    const text = await scrape();
    const deliveries = 'order_payments_webhook_deliveries_total';
    expect(sample(text, deliveries, 'outcome="accepted"')).toBe(1);
    expect(sample(text, deliveries, 'outcome="unmatched"')).toBe(1);
    expect(sample(text, deliveries, 'outcome="duplicate"')).toBeUndefined();
  });

  it('counts webhook deliveries by outcome: accepted, duplicate, ignored and each refusal', async () => {
    app = await buildWebhookApp({ payments: recordingPaymentStarter(), metrics });
    const event = paymentEvent();
    await deliverWebhook(app, event); // accepted
    await deliverWebhook(app, event); // the provider's retry: duplicate
    await deliverWebhook(app, { ...event, amount: event.amount + 1 }); // another body: 409
    await deliverWebhook(app, paymentEvent()); // accepted
    await deliverWebhook(app, { ...paymentEvent(), event: 'payment.failed' }); // ignored
    await deliverWebhook(app, paymentEvent(), { signature: null }); // 401
    await deliverWebhook(app, paymentEvent(), { signature: 'ab'.repeat(32) }); // 401
    await deliverWebhook(app, '{"event":'); // 400
    await deliverWebhook(app, 'x'.repeat(70_000)); // 413

    const text = await scrape();
    const deliveries = 'order_payments_webhook_deliveries_total';
    expect(sample(text, deliveries, 'outcome="accepted"')).toBe(2);
    expect(sample(text, deliveries, 'outcome="duplicate"')).toBe(1);
    expect(sample(text, deliveries, 'outcome="ignored"')).toBe(1);
    expect(sample(text, deliveries, 'outcome="401"')).toBe(2);
    expect(sample(text, deliveries, 'outcome="400"')).toBe(1);
    expect(sample(text, deliveries, 'outcome="413"')).toBe(1);
    expect(sample(text, deliveries, 'outcome="409"')).toBe(1);
    // Every delivery is in the latency histogram under its outcome.
    expect(
      sample(text, 'order_payments_webhook_duration_seconds_count', 'outcome="accepted"'),
    ).toBe(2);
    expect(
      sample(text, 'order_payments_webhook_duration_seconds_bucket', 'le="+Inf",outcome="401"'),
    ).toBe(2);
    expect(text).toContain(
      'order_payments_http_request_duration_seconds_count{method="POST",route="/api/v1/webhooks/payment",status_code="200"} 4',
    );
  });

  it('counts 429 for a client over its failure budget and 503 while Temporal is unavailable', async () => {
    app = await buildWebhookApp({
      payments: {
        start: () => Promise.reject(new TemporalUnavailableError(new Error('connection refused'))),
        startRefund: () => Promise.reject(new Error('no refunds here')),
        startDispute: () => Promise.reject(new Error('no refunds here')),
      },
      config: { WEBHOOK_AUTH_FAILURE_LIMIT: 1 },
      metrics,
    });
    await deliverWebhook(app, paymentEvent()); // 503
    await deliverWebhook(app, paymentEvent(), { signature: null }); // 401, uses up the budget
    await deliverWebhook(app, paymentEvent(), { signature: null }); // 429

    const text = await scrape();
    expect(sample(text, 'order_payments_webhook_deliveries_total', 'outcome="503"')).toBe(1);
    expect(sample(text, 'order_payments_webhook_deliveries_total', 'outcome="401"')).toBe(1);
    expect(sample(text, 'order_payments_webhook_deliveries_total', 'outcome="429"')).toBe(1);
  });

  it("serves Node's process metrics when asked to, each app counting in a registry of its own", async () => {
    const other = await buildWebhookApp({ payments: recordingPaymentStarter(), metrics });
    await deliverWebhook(other, paymentEvent());
    await other.close();
    metrics = createHttpMetrics({ defaultMetrics: true });
    app = await buildWebhookApp({ payments: recordingPaymentStarter(), metrics });

    const text = await scrape();
    expect(text).toContain('process_cpu_user_seconds_total');
    expect(text).toContain('nodejs_eventloop_lag_seconds');
    expect(text).not.toContain('outcome="accepted"');
  });
});
