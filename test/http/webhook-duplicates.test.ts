import type { FastifyInstance } from 'fastify';
import { paymentWorkflowId } from '../../src/shared/constants';
import {
  type ExistingPayment,
  type PaymentStarter,
  TemporalUnavailableError,
} from '../../src/temporal/payment-starter';
import { capturingLogger } from '../support/capturing-logger';
import { buildWebhookApp, deliverWebhook, expectAccepted, paymentEvent } from '../support/webhook';

// What the webhook answers to a duplicate, whatever the starter could learn about the first
// delivery (the real starter's side of it: test/temporal/payment-starter.test.ts; against a
// real server: test/http/payment-webhook.test.ts).

/** A starter that reports every delivery as a duplicate whose first run is `existing`. */
const duplicateOf = (existing: ExistingPayment): PaymentStarter => ({
  startRefund: () => Promise.reject(new Error('no refunds here')),
  startDispute: () => Promise.reject(new Error('no refunds here')),
  start: (input) =>
    Promise.resolve({ workflowId: paymentWorkflowId(input.eventId), duplicate: true, existing }),
});

let opened: FastifyInstance[] = [];
async function appWith(existing: ExistingPayment | PaymentStarter) {
  const { lines, logger } = capturingLogger();
  const payments = 'start' in existing ? existing : duplicateOf(existing);
  const app = await buildWebhookApp({ payments, logger });
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
    expectAccepted(res);
    expect(logged().filter((l) => l.level >= 40)).toEqual([]);
    expect(logged()).toContainEqual(
      expect.objectContaining({
        level: 30,
        duplicate: true,
        msg: 'webhook accepted: duplicate delivery',
      }),
    );
  });

  it('compares nothing the first run did not record, and says so', async () => {
    const { app, logged } = await appWith({ known: true, orderId: undefined, amount: undefined });
    const res = await deliverWebhook(app, paymentEvent({ order_id: 7, amount: 3 }));
    expect(res.statusCode).toBe(200);
    expect(logged()).toContainEqual(
      expect.objectContaining({ notCompared: "the first run's memo has no order ID or amount" }),
    );
  });

  it('compares what the first run recorded when its memo has no order ID', async () => {
    const { app, logged } = await appWith({ known: true, orderId: undefined, amount: 5400 });
    const sameAmount = await deliverWebhook(app, paymentEvent({ order_id: 42, amount: 5400 }));
    expect(sameAmount.statusCode).toBe(200);
    expect(logged()).toContainEqual(
      expect.objectContaining({ notCompared: "the first run's memo has no order ID" }),
    );
    const otherAmount = await deliverWebhook(app, paymentEvent({ order_id: 42, amount: 1 }));
    expect(otherAmount.json<{ error: string }>().error).toMatch(/different amount;/);
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
    expectAccepted(res, paymentWorkflowId(event.id));
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

describe('what the webhook logs and answers about the start', () => {
  const failingWith = (error: Error): PaymentStarter => ({
    start: () => Promise.reject(error),
    startRefund: () => Promise.reject(error),
    startDispute: () => Promise.reject(error),
  });

  it('logs an accepted first delivery once, at info, with its workflow', async () => {
    const { app, logged } = await appWith({
      startRefund: () => Promise.reject(new Error('no refunds here')),
      startDispute: () => Promise.reject(new Error('no refunds here')),
      start: (input) =>
        Promise.resolve({ workflowId: paymentWorkflowId(input.eventId), duplicate: false }),
    });
    const event = paymentEvent({ order_id: 42 });
    expect((await deliverWebhook(app, event)).statusCode).toBe(200);
    expect(logged().filter((l) => l.msg.startsWith('webhook'))).toEqual([
      expect.objectContaining({
        level: 30,
        eventId: event.id,
        orderId: 42,
        workflowId: paymentWorkflowId(event.id),
        duplicate: false,
        msg: 'webhook accepted: payment workflow started',
      }),
    ]);
  });

  it('answers 503 to an outage, and warns', async () => {
    const { app, logged } = await appWith(
      failingWith(new TemporalUnavailableError(new Error('14 UNAVAILABLE'))),
    );
    const res = await deliverWebhook(app, paymentEvent());
    expect([res.statusCode, res.headers['retry-after']]).toEqual([503, '5']);
    expect(logged().filter((l) => l.msg.startsWith('webhook'))).toEqual([
      expect.objectContaining({ level: 40, msg: 'webhook deferred: Temporal unavailable' }),
    ]);
  });

  it('answers 503 to a configuration problem too, but logs it as an error with the fix', async () => {
    const refused = Object.assign(new Error('5 NOT_FOUND'), {
      code: 5,
      details: 'Namespace x is not found',
    });
    const { app, logged } = await appWith(failingWith(new TemporalUnavailableError(refused)));
    const res = await deliverWebhook(app, paymentEvent());
    expect(res.statusCode).toBe(503);
    expect(logged().filter((l) => l.msg.startsWith('webhook'))).toEqual([
      expect.objectContaining({
        level: 50,
        reason: expect.stringMatching(/namespace does not exist .*temporal:setup/),
        msg: 'webhook deferred: Temporal refused the start: configuration error, not an outage',
      }),
    ]);
  });

  it('answers 500, not 503, when the start fails for a reason of ours', async () => {
    const { app } = await appWith(failingWith(new TypeError('a bug')));
    expect((await deliverWebhook(app, paymentEvent())).statusCode).toBe(500);
  });

  it('warns once when a client uses up its budget of failed signature checks', async () => {
    const { lines, logger } = capturingLogger();
    const app = await buildWebhookApp({
      payments: duplicateOf({ known: true, orderId: 1, amount: 1 }),
      logger,
      config: { WEBHOOK_AUTH_FAILURE_LIMIT: 2 },
    });
    opened.push(app);
    const statuses = [];
    for (let i = 0; i < 4; i++) {
      statuses.push(
        (await deliverWebhook(app, paymentEvent(), { signature: 'f'.repeat(64) })).statusCode,
      );
    }
    expect(statuses).toEqual([401, 401, 429, 429]);
    const warnings = lines
      .map((l) => JSON.parse(l) as { level: number; msg: string; clientIp?: string })
      .filter((l) => l.msg.startsWith('webhook: client used up its budget'));
    expect(warnings).toEqual([
      expect.objectContaining({ level: 40, clientIp: expect.any(String) }),
    ]);
  });

  it('names malformed JSON as such', async () => {
    const { app } = await appWith(duplicateOf({ known: true, orderId: 1, amount: 1 }));
    const res = await deliverWebhook(app, '{"id": "evt_1", ');
    expect([res.statusCode, res.json<{ error: string }>().error]).toEqual([
      400,
      'body is not valid JSON',
    ]);
  });

  describe('of a payment its workflow kept as unmatched (unknown order)', () => {
    const inboxWith = (kept: Map<string, number>, fail?: Error) => {
      const counted: string[] = [];
      const unmatchedRepository = {
        record: () => Promise.reject(new Error('nothing is kept at the edge here')),
        countRedelivery: (eventId: string, reason: string) => {
          if (fail) return Promise.reject(fail);
          const id = reason === 'unknown_order' ? kept.get(eventId) : undefined;
          if (id !== undefined) counted.push(eventId);
          return Promise.resolve(id === undefined ? undefined : { id });
        },
      };
      return { unmatchedRepository, counted };
    };
    const appKeeping = async (
      unmatchedRepository: ReturnType<typeof inboxWith>['unmatchedRepository'],
    ) => {
      const { lines, logger } = capturingLogger();
      const app = await buildWebhookApp({
        payments: duplicateOf({ known: true, orderId: 42, amount: 5400 }),
        logger,
        unmatchedRepository,
      });
      opened.push(app);
      return { app, logged: () => lines.map((l) => JSON.parse(l) as Record<string, unknown>) };
    };

    it('answers unmatched and counts the delivery in its entry', async () => {
      const event = paymentEvent({ order_id: 42, amount: 5400 });
      const { unmatchedRepository, counted } = inboxWith(new Map([[event.id, 7]]));
      const { app, logged } = await appKeeping(unmatchedRepository);
      const res = await deliverWebhook(app, event);
      expect([res.statusCode, res.json()]).toEqual([200, { status: 'unmatched' }]);
      expect(res.headers['x-workflow-id']).toBe(paymentWorkflowId(event.id));
      expect(counted).toEqual([event.id]);
      expect(logged()).toContainEqual(expect.objectContaining({ level: 40, unmatchedId: 7 }));
    });

    it('answers accepted when nothing is kept for it (yet)', async () => {
      const { unmatchedRepository, counted } = inboxWith(new Map());
      const { app } = await appKeeping(unmatchedRepository);
      const res = await deliverWebhook(app, paymentEvent({ order_id: 42, amount: 5400 }));
      expectAccepted(res);
      expect(counted).toEqual([]);
    });

    it('still answers 200 when the inbox cannot count it, and warns: the event is queued', async () => {
      const { unmatchedRepository } = inboxWith(new Map(), new Error('database is down'));
      const { app, logged } = await appKeeping(unmatchedRepository);
      const res = await deliverWebhook(app, paymentEvent({ order_id: 42, amount: 5400 }));
      expectAccepted(res);
      expect(logged()).toContainEqual(
        expect.objectContaining({
          level: 40,
          msg: 'webhook: could not count a duplicate delivery in the unmatched inbox',
        }),
      );
    });

    it('refuses another body with 409 before counting anything', async () => {
      const event = paymentEvent({ order_id: 42, amount: 1 });
      const { unmatchedRepository, counted } = inboxWith(new Map([[event.id, 7]]));
      const { app } = await appKeeping(unmatchedRepository);
      const res = await deliverWebhook(app, event);
      expect(res.statusCode).toBe(409);
      expect(counted).toEqual([]);
    });
  });
});
