import type { FastifyInstance } from 'fastify';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { buildApp } from '../../src/http/app';
import { signBody } from '../../src/http/signature';
import { PAYMENT_WEBHOOK_PATH } from '../../src/http/routes/payment-webhook';
import { createLogger } from '../../src/logger';
import {
  createOrdersRepository,
  createPaymentsRepository,
  type DatabaseHandle,
} from '../../src/db';
import { paymentWorkflowId } from '../../src/shared/constants';
import { orderWorkflowId } from '../../src/shared/order';
import { createPaymentStarter } from '../../src/temporal/payment-starter';
import {
  createWarehouseSimulator,
  type WarehouseSimulator,
} from '../../dev/partners/warehouse-simulator';
import { startSmtpSink, type SmtpSink } from '../../dev/partners/smtp-sink';
import { createLoyaltyRepository } from '../../src/db';
import { testActivityDeps } from '../support/activity-deps';
import { createPaymentWorker } from '../../src/workers/payments';
import { testDatabases } from '../support/databases';
import { createDevServerEnv } from '../support/temporal';
import { TEST_WEBHOOK_SECRET, uniqueEventId } from '../support/webhook';

// The whole flow over real sockets: HTTP webhook -> Temporal dev server -> worker -> database
// row and one call to the warehouse simulator.
let env: TestWorkflowEnvironment;

beforeAll(async () => {
  env = await createDevServerEnv();
});
afterAll(async () => {
  await env?.teardown();
});

describe.each(testDatabases)('payment flow end to end over HTTP ($name)', ({ create }) => {
  let db: DatabaseHandle;
  let warehouse: WarehouseSimulator;
  let smtp: SmtpSink;
  let app: FastifyInstance;
  let worker: Worker;
  let workerRun: Promise<void>;
  let baseUrl: string;

  beforeAll(async () => {
    db = await create();
    warehouse = createWarehouseSimulator();
    const warehouseUrl = await warehouse.listen(0);
    smtp = await startSmtpSink();
    const orders = createOrdersRepository(db.db);
    const payments = createPaymentsRepository(db.db);
    worker = await createPaymentWorker({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      activities: testActivityDeps(db, { warehouseUrl, smtpUrl: smtp.url }),
    });
    workerRun = worker.run();
    app = await buildApp({
      config: { PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET, WEBHOOK_BODY_LIMIT_BYTES: 65536 },
      logger: createLogger({ LOG_LEVEL: 'silent' }),
      payments: createPaymentStarter(env.client, { startTimeoutMs: 5000 }),
      ordersRepository: orders,
      paymentsRepository: payments,
    });
    baseUrl = await app.listen({ port: 0, host: '127.0.0.1' });
  });

  afterAll(async () => {
    await app?.close();
    worker?.shutdown();
    await workerRun;
    await smtp?.close();
    await warehouse?.close();
    await db?.close();
  });

  async function http(
    path: string,
    init: { method?: string; body?: string; headers?: Record<string, string> } = {},
  ) {
    const response = await fetch(new URL(path, baseUrl), init);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  }

  it('turns a signed webhook, delivered twice, into one payment row and one warehouse call', async () => {
    const order = await http('/api/v1/orders', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': uniqueEventId('order') },
      body: JSON.stringify({ user_id: 1, customer_email: 'buyer@example.com', total_amount: 5400 }),
    });
    expect(order.status).toBe(201);
    const orderId = order.body.id as number;

    const eventId = uniqueEventId();
    const raw = JSON.stringify({
      id: eventId,
      event: 'payment.succeeded',
      order_id: orderId,
      amount: 5400,
    });
    const deliver = () =>
      http(PAYMENT_WEBHOOK_PATH, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-payment-signature': signBody(raw, TEST_WEBHOOK_SECRET),
        },
        body: raw,
      });
    expect(await deliver()).toEqual({ status: 200, body: { status: 'accepted' } });
    expect(await deliver()).toEqual({ status: 200, body: { status: 'accepted' } });

    const result = await env.client.workflow.getHandle(paymentWorkflowId(eventId)).result();
    expect(result).toMatchObject({ created: true, orderWorkflowId: orderWorkflowId(orderId) });
    await env.client.workflow.getHandle(orderWorkflowId(orderId)).result();

    const view = await http(`/api/v1/orders/${orderId}`);
    expect(view.body).toMatchObject({ id: orderId, status: 'paid', shipment_status: 'requested' });
    expect(view.body.payments).toEqual([
      expect.objectContaining({ provider_event_id: eventId, amount: 5400 }),
    ]);
    expect(warehouse.requests.filter((r) => r.orderId === orderId)).toHaveLength(1);
    expect(warehouse.shipments.size).toBe(1);
    // The rest of the fulfilment, once: the confirmation mail and the loyalty points.
    expect(smtp.messages.map((m) => m.messageId)).toEqual([
      `<order-${orderId}-confirmation@test.local>`,
    ]);
    expect(await createLoyaltyRepository(db.db).balanceOf(1)).toBe(100);
  });
});
