import type { FastifyInstance } from 'fastify';
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { signBody } from '../../src/http/signature';
import { createDatabase, migrateToLatest } from '../../src/db';
import { PAYMENTS_TASK_QUEUE, paymentWorkflowId } from '../../src/shared/constants';
import { createLazyClient } from '../../src/temporal/connection';
import { buildTestApp } from '../support/app';
import { capturingLogger } from '../support/capturing-logger';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { deliverWebhook, paymentEvent, TEST_WEBHOOK_SECRET } from '../support/webhook';

// The webhook against a real Temporal dev server (no worker: started workflows stay Running,
// which is all the webhook promises: "durably queued").
let env: TestWorkflowEnvironment;
let db: ReturnType<typeof createDatabase>;
let app: FastifyInstance;

const BODY_LIMIT = 4096;

async function appWith(client: Client, startTimeoutMs = 5000): Promise<FastifyInstance> {
  return buildTestApp({
    db,
    client,
    startTimeoutMs,
    config: { WEBHOOK_BODY_LIMIT_BYTES: BODY_LIMIT },
  });
}

beforeAll(async () => {
  env = await createDevServerEnv();
  db = createDatabase('sqlite::memory:');
  await migrateToLatest(db.db);
  app = await appWith(env.client);
});

afterAll(async () => {
  await app?.close();
  await db?.close();
  await env?.teardown();
});

async function exists(workflowId: string): Promise<boolean> {
  try {
    await env.client.workflow.getHandle(workflowId).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

/** Number of executions (runs) ever started under a workflow ID, from the server's history. */
async function runsOf(workflowId: string): Promise<number> {
  // Visibility is eventually consistent; wait until it has caught up with the first start.
  for (let i = 0; i < 50; i++) {
    const count = await env.client.workflow.count(`WorkflowId = "${workflowId}"`);
    if (count.count > 0) return count.count;
    await new Promise((r) => setTimeout(r, 100));
  }
  return 0;
}

describe('POST /api/v1/webhooks/payment', () => {
  it('starts exactly one payment workflow with ID payment-<event id> and the event as argument', async () => {
    const event = paymentEvent({ order_id: 42, amount: 5400 });
    const res = await deliverWebhook(app, event);

    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'accepted' });
    const workflowId = paymentWorkflowId(event.id);
    expect(res.headers['x-workflow-id']).toBe(workflowId);

    const handle = env.client.workflow.getHandle(workflowId);
    const description = await handle.describe();
    expect(description.type).toBe('paymentWorkflow');
    expect(description.taskQueue).toBe(PAYMENTS_TASK_QUEUE);
    const history = await handle.fetchHistory();
    const input =
      history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
    expect(input.map((p) => defaultPayloadConverter.fromPayload(p))).toEqual([
      { eventId: event.id, orderId: 42, amount: 5400, paymentRef: event.id },
    ]);
    expect(await runsOf(workflowId)).toBe(1);
  });

  it('answers a duplicate delivery with 200 and still has one workflow execution', async () => {
    const event = paymentEvent();
    const first = await deliverWebhook(app, event);
    const firstRun = (await env.client.workflow.getHandle(paymentWorkflowId(event.id)).describe())
      .runId;
    const again = await Promise.all([
      deliverWebhook(app, event),
      deliverWebhook(app, event),
      deliverWebhook(app, event),
    ]);

    expect([first, ...again].map((r) => r.statusCode)).toEqual([200, 200, 200, 200]);
    expect(again.map((r) => r.json<unknown>())).toEqual(Array(3).fill({ status: 'accepted' }));
    expect(
      (await env.client.workflow.getHandle(paymentWorkflowId(event.id)).describe()).runId,
    ).toBe(firstRun);
    expect(await runsOf(paymentWorkflowId(event.id))).toBe(1);
  });

  it('answers a redelivery with another order_id or amount with 409, warns with both, and keeps the first', async () => {
    const captured = capturingLogger();
    const watched = await buildTestApp({
      db,
      client: env.client,
      config: { WEBHOOK_BODY_LIMIT_BYTES: BODY_LIMIT },
      logger: captured.logger,
    });
    try {
      const first = paymentEvent({ order_id: 42, amount: 5400 });
      const workflowId = paymentWorkflowId(first.id);
      expect((await deliverWebhook(watched, first)).statusCode).toBe(200);

      const conflicting: [object, string][] = [
        [{ ...first, amount: 1 }, 'amount'],
        [{ ...first, order_id: 43 }, 'order_id'],
        [{ ...first, order_id: 43, amount: 1 }, 'order_id and amount'],
      ];
      for (const [body, differs] of conflicting) {
        const res = await deliverWebhook(watched, body);
        expect([res.statusCode, res.json()]).toEqual([
          409,
          {
            error: `event ${first.id} was already received with a different ${differs}; this delivery is not processed`,
          },
        ]);
        expect(res.headers['x-workflow-id']).toBe(workflowId);
      }
      // The provider's plain retry is still a 200.
      expect((await deliverWebhook(watched, first)).json()).toEqual({ status: 'accepted' });

      const warnings = captured.lines
        .map((l) => JSON.parse(l) as { level: number; msg: string; eventId?: string })
        .filter((l) => l.level === 40 && l.eventId === first.id);
      expect(warnings).toEqual([
        expect.objectContaining({
          workflowId,
          received: { orderId: 42, amount: 1 },
          recorded: { orderId: 42, amount: 5400 },
        }),
        expect.objectContaining({
          received: { orderId: 43, amount: 5400 },
          recorded: { orderId: 42, amount: 5400 },
        }),
        expect.objectContaining({
          received: { orderId: 43, amount: 1 },
          recorded: { orderId: 42, amount: 5400 },
        }),
      ]);
      expect(warnings[0]!.msg).toMatch(/different body/);

      // Nothing was started for the conflicting bodies: one run, with the first input.
      const history = await env.client.workflow.getHandle(workflowId).fetchHistory();
      const input =
        history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads ?? [];
      expect(input.map((p) => defaultPayloadConverter.fromPayload(p))).toEqual([
        { eventId: first.id, orderId: 42, amount: 5400, paymentRef: first.id },
      ]);
      expect(await runsOf(workflowId)).toBe(1);
    } finally {
      await watched.close();
    }
  });

  it('rejects a missing signature with 401 and starts nothing', async () => {
    const event = paymentEvent();
    const res = await deliverWebhook(app, event, { signature: null });
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'missing X-Payment-Signature header' });
    expect(await exists(paymentWorkflowId(event.id))).toBe(false);
  });

  it.each([
    ['signed with another secret', { secret: 'not-the-secret' }],
    ['garbage', { signature: 'not-a-signature' }],
    ['all zeros', { signature: '0'.repeat(64) }],
  ])('rejects a bad signature (%s) with 401 and starts nothing', async (_label, options) => {
    const event = paymentEvent();
    const res = await deliverWebhook(app, event, options);
    expect(res.statusCode).toBe(401);
    expect(res.json()).toEqual({ error: 'invalid signature' });
    expect(await exists(paymentWorkflowId(event.id))).toBe(false);
  });

  it('rejects a body altered after signing with 401', async () => {
    const event = paymentEvent({ amount: 100 });
    const signedFor = JSON.stringify(event);
    const tampered = JSON.stringify({ ...event, amount: 1 });
    const res = await deliverWebhook(app, tampered, {
      signature: signBody(signedFor, TEST_WEBHOOK_SECRET),
    });
    expect(res.statusCode).toBe(401);
    expect(await exists(paymentWorkflowId(event.id))).toBe(false);
  });

  it('acknowledges other event types as ignored and starts no workflow', async () => {
    const event = paymentEvent({ event: 'payment.failed' });
    const res = await deliverWebhook(app, event);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ignored' });
    expect(await exists(paymentWorkflowId(event.id))).toBe(false);
  });

  it.each([
    ['malformed JSON', '{"id": "evt_1", "event": '],
    ['a JSON array', '[1,2,3]'],
    ['a JSON string', '"payment.succeeded"'],
    ['invalid UTF-8', Buffer.from([0x7b, 0xff, 0xfe, 0x7d])],
    ['an empty body', ''],
  ])('rejects %s with 400', async (_label, raw) => {
    const res = await deliverWebhook(app, raw);
    expect(res.statusCode).toBe(400);
    expect(res.json<{ error: string }>().error.length).toBeGreaterThan(0);
  });

  it.each([
    ['missing id', { id: undefined }],
    ['id with a slash', { id: 'evt/../../x' }],
    ['order_id as string', { order_id: '12' }],
    ['negative amount', { amount: -5 }],
    ['fractional amount', { amount: 1.5 }],
    ['unsafe integer order_id', { order_id: 2 ** 60 }],
  ])(
    'rejects a payment event with %s with 400 and a reason, starting nothing',
    async (_label, overrides) => {
      const event = { ...paymentEvent(), ...overrides };
      const res = await deliverWebhook(app, event);
      expect(res.statusCode).toBe(400);
      expect(res.json<{ error: string }>().error).toMatch(/id|order_id|amount/);
    },
  );

  it('names each invalid field once, however many of its checks fail', async () => {
    // 2^53 + 1 (it parses to 2^53): beyond the safe integers, which both int and max refuse.
    const raw = JSON.stringify(paymentEvent()).replace(
      /"order_id":1,"amount":5400/,
      '"order_id":9007199254740993,"amount":9007199254740993',
    );
    const res = await deliverWebhook(app, raw);
    expect([res.statusCode, res.json()]).toEqual([
      400,
      {
        error:
          'order_id: Too big: expected number to be <=2147483647; ' +
          'amount: Too big: expected number to be <=2147483647',
      },
    ]);
  });

  it('refuses an amount or order ID beyond the database integer columns (2^31 - 1) with 400', async () => {
    for (const overrides of [{ amount: 2_147_483_648 }, { order_id: 2_147_483_648 }]) {
      const event = { ...paymentEvent(), ...overrides };
      const res = await deliverWebhook(app, event);
      expect(res.statusCode).toBe(400);
      expect(res.json<{ error: string }>().error).toMatch(/<=2147483647/);
      expect(await exists(paymentWorkflowId(event.id))).toBe(false);
    }
    const largest = { ...paymentEvent(), amount: 2_147_483_647 };
    expect((await deliverWebhook(app, largest)).statusCode).toBe(200);
  });

  it('accepts a signed body whatever content type it claims', async () => {
    const event = paymentEvent();
    const res = await deliverWebhook(app, event, { headers: { 'content-type': 'text/plain' } });
    expect(res.statusCode).toBe(200);
    expect(await exists(paymentWorkflowId(event.id))).toBe(true);
  });

  it('rejects a body over the size limit with 413 before checking anything else', async () => {
    const event = { ...paymentEvent(), padding: 'x'.repeat(BODY_LIMIT) };
    const res = await deliverWebhook(app, event);
    expect(res.statusCode).toBe(413);
    expect(await exists(paymentWorkflowId(event.id))).toBe(false);
  });

  it('answers 503 with Retry-After when Temporal is unreachable, so the provider delivers again', async () => {
    // Nothing listens on port 1: every start attempt fails until the deadline.
    const unreachable = createLazyClient({ address: '127.0.0.1:1', namespace: 'default' });
    const downApp = await appWith(unreachable, 500);
    try {
      const event = paymentEvent();
      const res = await deliverWebhook(downApp, event);
      expect(res.statusCode).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.json<{ error: string }>().error).toMatch(/unavailable/);

      // Delivered again once Temporal is back: accepted, and the workflow exists.
      const retried = await deliverWebhook(app, event);
      expect(retried.statusCode).toBe(200);
      expect(await exists(paymentWorkflowId(event.id))).toBe(true);
    } finally {
      await downApp.close();
      await unreachable.connection.close();
    }
  });
});
