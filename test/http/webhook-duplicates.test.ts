import type { FastifyInstance } from 'fastify';
import { paymentWorkflowId } from '../../src/shared/constants';
import type { ExistingPayment, PaymentStarter } from '../../src/temporal/payment-starter';
import { capturingLogger } from '../support/capturing-logger';
import { buildWebhookApp, deliverWebhook, paymentEvent } from '../support/webhook';

// What the webhook answers to a duplicate, whatever the starter could learn about the first
// delivery (the real starter's side of it: test/temporal/payment-starter.test.ts; against a
// real server: test/http/payment-webhook.test.ts).

/** A starter that reports every delivery as a duplicate whose first run is `existing`. */
const duplicateOf = (existing: ExistingPayment): PaymentStarter => ({
  start: (input) =>
    Promise.resolve({ workflowId: paymentWorkflowId(input.eventId), duplicate: true, existing }),
});

let opened: FastifyInstance[] = [];
async function appWith(existing: ExistingPayment) {
  const { lines, logger } = capturingLogger();
  const app = await buildWebhookApp({ payments: duplicateOf(existing), logger });
  opened.push(app);
  const logged = () =>
    lines.map((l) => JSON.parse(l) as { level: number; msg: string } & Record<string, unknown>);
  return { app, logged };
}
afterEach(async () => {
  await Promise.all(opened.map((app) => app.close()));
  opened = [];
});

describe('duplicate deliveries', () => {
  it('answers the same body 200, as a provider retry', async () => {
    const { app, logged } = await appWith({ known: true, orderId: 42, amount: 5400 });
    const res = await deliverWebhook(app, paymentEvent({ order_id: 42, amount: 5400 }));
    expect([res.statusCode, res.json()]).toEqual([200, { status: 'accepted' }]);
    expect(logged().filter((l) => l.level >= 40)).toEqual([]);
  });

  it('still answers 200 when the first run cannot be read, and warns why', async () => {
    const cause = new Error('deadline exceeded');
    const { app, logged } = await appWith({
      known: false,
      reason: 'the existing run could not be described',
      cause,
    });
    const event = paymentEvent({ order_id: 42, amount: 1 });
    const res = await deliverWebhook(app, event);
    expect([res.statusCode, res.json()]).toEqual([200, { status: 'accepted' }]);
    expect(res.headers['x-workflow-id']).toBe(paymentWorkflowId(event.id));
    expect(logged().filter((l) => l.level === 40)).toEqual([
      expect.objectContaining({
        eventId: event.id,
        orderId: 42,
        amount: 1,
        reason: 'the existing run could not be described',
        err: expect.objectContaining({ message: 'deadline exceeded' }),
        msg: 'webhook accepted: duplicate delivery, not compared with the first',
      }),
    ]);
  });

  it('compares what the first run recorded when its memo has no amount', async () => {
    const { app, logged } = await appWith({ known: true, orderId: 42, amount: undefined });
    const sameOrder = await deliverWebhook(app, paymentEvent({ order_id: 42, amount: 1 }));
    expect(sameOrder.statusCode).toBe(200);
    expect(logged()).toContainEqual(
      expect.objectContaining({
        msg: 'webhook accepted: duplicate delivery',
        notCompared: "the first run's memo has no amount",
      }),
    );

    const otherOrder = await deliverWebhook(app, paymentEvent({ order_id: 43, amount: 1 }));
    expect(otherOrder.statusCode).toBe(409);
    expect(otherOrder.json<{ error: string }>().error).toMatch(/different order_id;/);
  });
});
