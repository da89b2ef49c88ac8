import { freePort } from '../../harness/ports';
import type { FastifyInstance } from 'fastify';
import { sql } from 'kysely';
import {
  createDatabase,
  createOrdersRepository,
  createPaymentsRepository,
  type DatabaseHandle,
  migrateToLatest,
} from '../../src/db';
import { buildApp } from '../../src/http/app';
import { noPayments } from '../support/app';
import { capturingLogger } from '../support/capturing-logger';
import { startFreezablePostgres, type FreezablePostgres } from '../db/hung-postgres';

const body = { user_id: 7, customer_email: 'buyer@example.com', total_amount: 5400 };
// The server's statement_timeout in src/db/connection.ts; a hung server never enforces it.
const STATEMENT_TIMEOUT_MS = 5_000;

function appOver(
  orders: ReturnType<typeof createOrdersRepository>,
  payments: ReturnType<typeof createPaymentsRepository>,
) {
  const { lines, logger } = capturingLogger();
  const app = buildApp({
    config: { PAYMENT_WEBHOOK_SECRET: 'unused', WEBHOOK_BODY_LIMIT_BYTES: 65536 },
    logger,
    payments: noPayments,
    unmatchedRepository: {
      record: () => Promise.reject(new Error('no webhook here')),
      countRedelivery: () => Promise.reject(new Error('no webhook here')),
    },
    ordersRepository: orders,
    paymentsRepository: payments,
  });
  return { app, lines };
}

const post = (app: FastifyInstance) =>
  app.inject({ method: 'POST', url: '/api/v1/orders', payload: body });

function expectOutage(res: Awaited<ReturnType<typeof post>>) {
  expect(res.statusCode).toBe(503);
  expect(res.headers['retry-after']).toMatch(/^[1-9][0-9]*$/);
  expect(res.json()).toMatchObject({ error: expect.stringMatching(/database.*unavailable/) });
}

describe('orders API while the database is down', () => {
  it('answers 503 with Retry-After when PostgreSQL refuses connections, and logs the cause', async () => {
    const handle = createDatabase(`postgres://postgres@127.0.0.1:${await freePort()}/postgres`);
    const { app: building, lines } = appOver(
      createOrdersRepository(handle.db),
      createPaymentsRepository(handle.db),
    );
    const app = await building;
    try {
      expectOutage(await post(app));
      expectOutage(await app.inject({ method: 'GET', url: '/api/v1/orders/1' }));
      expect(lines.join('\n')).toMatch(/ECONNREFUSED/);
    } finally {
      await app.close();
      await handle.close();
    }
  });

  it('answers 503 on SQLITE_BUSY (another process held the write lock too long)', async () => {
    const busy = Object.assign(new Error('database is locked'), { code: 'SQLITE_BUSY' });
    const handle = createDatabase('sqlite::memory:');
    const orders = {
      ...createOrdersRepository(handle.db),
      createWithIdempotencyKey: () => Promise.reject(busy),
    };
    const app = await appOver(orders, createPaymentsRepository(handle.db)).app;
    try {
      expectOutage(await post(app));
    } finally {
      await app.close();
      await handle.close();
    }
  });

  it('still answers a genuine bug with 500 and no internals', async () => {
    const handle = createDatabase('sqlite::memory:');
    const orders = {
      ...createOrdersRepository(handle.db),
      createWithIdempotencyKey: () =>
        Promise.reject(new TypeError("Cannot read properties of undefined (reading 'id')")),
    };
    const app = await appOver(orders, createPaymentsRepository(handle.db)).app;
    try {
      const res = await post(app);
      expect(res.statusCode).toBe(500);
      expect(res.headers['retry-after']).toBeUndefined();
      expect(res.json()).toMatchObject({ error: 'internal error' });
    } finally {
      await app.close();
      await handle.close();
    }
  });
});

describe('orders API while PostgreSQL hangs (SIGSTOP)', () => {
  let server: FreezablePostgres;
  let handle: DatabaseHandle;
  let app: FastifyInstance;
  beforeAll(async () => {
    server = await startFreezablePostgres();
    handle = createDatabase(server.url, { poolMax: 1 });
    await migrateToLatest(handle.db);
    app = await appOver(createOrdersRepository(handle.db), createPaymentsRepository(handle.db)).app;
  }, 120_000);
  afterAll(async () => {
    server?.thaw();
    await app?.close();
    await handle?.close();
    await server?.stop();
  });

  it('answers 503 within a bounded time, and 201 again once the server is back', async () => {
    await sql`SELECT 1`.execute(handle.db); // a pooled connection, as in steady traffic
    await server.freeze();
    try {
      const started = Date.now();
      const res = await post(app);
      expect(Date.now() - started).toBeLessThan(STATEMENT_TIMEOUT_MS + 3_000);
      expectOutage(res);
    } finally {
      server.thaw();
    }
    expect((await post(app)).statusCode).toBe(201);
  }, 60_000);
});
