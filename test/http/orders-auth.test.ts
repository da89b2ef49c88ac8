import { spawnSync } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { parseApiKeys } from '../../src/config/api-keys';
import { ordersApiAccess } from '../../src/http/orders-auth';
import { ConfigError, loadConfig } from '../../src/config';
import { buildTestApp, silentLogger } from '../support/app';
import { capturingLogger } from '../support/capturing-logger';
import { PRODUCTION_ENV } from '../support/production-env';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';
import {
  deliverWebhook,
  paymentEvent,
  recordingPaymentStarter,
  TEST_WEBHOOK_SECRET,
} from '../support/webhook';

// The orders API behind API keys (issue 14): who gets in, what each key's scope shows, and that
// hostile credentials get a 4xx that says nothing about which orders exist.

const KEY = {
  shop: 'shop-key-0123456789abcdef0123456789ab',
  reader: 'reader-key-0123456789abcdef012345678',
  support: 'support-key-0123456789abcdef01234567',
  next: 'next-shop-key-0123456789abcdef0123456',
};
const ALL_KEYS = [
  `shop:${KEY.shop}:orders:write+orders:read`,
  `reader:${KEY.reader}:orders:read`,
  `support:${KEY.support}:orders:read:pii`,
].join(',');

const sqlite = testDatabases.find((d) => d.name === 'sqlite')!;
let db: TestDatabaseHandle;
const apps: FastifyInstance[] = [];

beforeAll(async () => {
  db = await sqlite.create();
});
afterAll(async () => {
  await Promise.all(apps.map((a) => a.close()));
  await db?.close();
});

async function appWith(
  env: Record<string, string>,
  logger = silentLogger(),
): Promise<FastifyInstance> {
  const config = loadConfig({ PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET, ...env });
  const app = await buildTestApp({ db, config, logger, payments: recordingPaymentStarter() });
  apps.push(app);
  return app;
}

const orderBody = { user_id: 3, customer_email: 'jane.doe@example.com', total_amount: 5400 };
const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const getOrder = (app: FastifyInstance, id: number | string, headers = {}) =>
  app.inject({ method: 'GET', url: `/api/v1/orders/${id}`, headers });
const postOrder = (app: FastifyInstance, headers = {}) =>
  app.inject({ method: 'POST', url: '/api/v1/orders', payload: orderBody, headers });

async function existingOrderId(app: FastifyInstance): Promise<number> {
  const created = await postOrder(app, bearer(KEY.shop));
  expect(created.statusCode).toBe(201);
  return created.json<{ id: number }>().id;
}

describe('ORDERS_API_KEYS', () => {
  it('parses several keys with their scopes; orders:read:pii implies orders:read', () => {
    const keys = parseApiKeys(ALL_KEYS);
    expect(keys.map((k) => [k.id, [...k.scopes].sort()])).toEqual([
      ['shop', ['orders:read', 'orders:write']],
      ['reader', ['orders:read']],
      ['support', ['orders:read', 'orders:read:pii']],
    ]);
    // Only digests are kept: the configuration object holds no usable credential.
    expect(JSON.stringify(loadConfig({ ORDERS_API_KEYS: ALL_KEYS }))).not.toContain(KEY.shop);
  });

  it.each([
    ['a short key', `shop:short:orders:read`, /key "shop": the key must be 32-512 characters/],
    ['an unknown scope', `shop:${KEY.shop}:orders:delete`, /unknown scope "orders:delete"/],
    ['no scope', `shop:${KEY.shop}`, /unknown scope ""/],
    ['a key id twice', `a:${KEY.shop}:orders:read,a:${KEY.next}:orders:read`, /used twice/],
    ['a key twice', `a:${KEY.shop}:orders:read,b:${KEY.shop}:orders:read`, /configured twice/],
    ['a bad id', `sh op:${KEY.shop}:orders:read`, /entry 1: the key id must be/],
  ])('refuses %s, naming the variable and never the key', (_label, setting, message) => {
    let error: unknown;
    try {
      loadConfig({ ORDERS_API_KEYS: setting });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as Error).message).toMatch(/ORDERS_API_KEYS: /);
    expect((error as Error).message).toMatch(message);
    expect((error as Error).message).not.toContain(KEY.shop);
  });
});

describe('who may serve the orders API', () => {
  const production = { ...PRODUCTION_ENV, HOST: '0.0.0.0' };

  it('refuses production with the API on and no keys, saying what to set', () => {
    const config = loadConfig(production);
    expect(() => ordersApiAccess(config)).toThrow(ConfigError);
    expect(() => ordersApiAccess(config)).toThrow(
      /ORDERS_API_KEYS: in production the orders API needs keys .*or set ORDERS_API=off/,
    );
  });

  it('stops the production HTTP process before it listens, with that message, exit 1', () => {
    const { ORDERS_API_KEYS: _k, ORDERS_API: _o, ...inherited } = process.env;
    const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/http/server.ts'], {
      cwd: path.resolve(__dirname, '../..'),
      env: { ...inherited, ...production, LOG_LEVEL: 'silent', PORT: '0', ADMIN_ADDRESS: 'off' },
      encoding: 'utf8',
      timeout: 30_000,
    });
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('ORDERS_API_KEYS: in production the orders API needs keys');
    expect(run.stderr).toContain('ORDERS_API=off');
  });

  it('starts production with keys, or with the API off', () => {
    expect(ordersApiAccess(loadConfig({ ...production, ORDERS_API_KEYS: ALL_KEYS })).kind).toBe(
      'keys',
    );
    expect(ordersApiAccess(loadConfig({ ...production, ORDERS_API: 'off' })).kind).toBe('off');
  });

  it('is open without keys in development on loopback only', () => {
    expect(ordersApiAccess(loadConfig({})).kind).toBe('open');
    expect(ordersApiAccess(loadConfig({ HOST: 'localhost' })).kind).toBe('open');
    expect(() => ordersApiAccess(loadConfig({ HOST: '0.0.0.0' }))).toThrow(
      /HOST=0\.0\.0\.0 is not loopback.*set ORDERS_API_KEYS/,
    );
    // Keys, once configured, are required in development too.
    expect(ordersApiAccess(loadConfig({ ORDERS_API_KEYS: ALL_KEYS })).kind).toBe('keys');
  });
});

describe('the orders API with keys', () => {
  let app: FastifyInstance;
  beforeAll(async () => {
    app = await appWith({ ORDERS_API_KEYS: ALL_KEYS });
  });

  it('answers 401 without a key and with a wrong one, 201/200 with the right one', async () => {
    const missing = await postOrder(app);
    expect(missing.statusCode).toBe(401);
    expect(missing.headers['www-authenticate']).toBe('Bearer realm="orders"');
    expect(missing.json()).toEqual({
      error: 'an API key is required: send Authorization: Bearer <key>',
    });
    const wrong = await postOrder(app, bearer(`${KEY.shop.slice(0, -1)}X`));
    expect(wrong.statusCode).toBe(401);
    expect(wrong.json()).toEqual({ error: 'invalid API key' });

    const id = await existingOrderId(app);
    expect((await getOrder(app, id)).statusCode).toBe(401);
    expect((await getOrder(app, id, bearer(KEY.next))).statusCode).toBe(401);
    const read = await getOrder(app, id, bearer(KEY.reader));
    expect(read.statusCode).toBe(200);
    expect(read.json()).toMatchObject({ id, status: 'pending', payments: [] });
  });

  it('answers 403 to a key without the scope the route needs', async () => {
    const id = await existingOrderId(app);
    const create = await postOrder(app, bearer(KEY.reader));
    expect(create.statusCode).toBe(403);
    expect(create.json()).toEqual({ error: 'this API key lacks the orders:write scope' });
    expect(create.headers['www-authenticate']).toContain('error="insufficient_scope"');
    const writeOnly = await appWith({ ORDERS_API_KEYS: `w:${KEY.shop}:orders:write` });
    expect((await getOrder(writeOnly, id, bearer(KEY.shop))).statusCode).toBe(403);
  });

  it('shows the customer e-mail only to a key with orders:read:pii', async () => {
    const created = await postOrder(app, bearer(KEY.shop));
    expect(created.json()).not.toHaveProperty('customer_email');
    const id = created.json<{ id: number }>().id;

    const plain = await getOrder(app, id, bearer(KEY.reader));
    expect(plain.json()).not.toHaveProperty('customer_email');
    expect(plain.body).not.toContain('jane.doe');
    const pii = await getOrder(app, id, bearer(KEY.support));
    expect(pii.json()).toHaveProperty('customer_email', 'jane.doe@example.com');
  });

  it('accepts the scheme in any case and spaces around the key', async () => {
    const id = await existingOrderId(app);
    expect((await getOrder(app, id, { authorization: `bearer   ${KEY.reader} ` })).statusCode).toBe(
      200,
    );
  });

  it('refuses a rotated-out key once it is removed, while the new one keeps working', async () => {
    const id = await existingOrderId(app);
    const old = `shop:${KEY.shop}:orders:read+orders:write`;
    const next = `shop-2025:${KEY.next}:orders:read+orders:write`;
    // During the rotation both are configured; then the deploy without the old one.
    const during = await appWith({ ORDERS_API_KEYS: `${next},${old}` });
    expect((await getOrder(during, id, bearer(KEY.shop))).statusCode).toBe(200);
    expect((await getOrder(during, id, bearer(KEY.next))).statusCode).toBe(200);
    const after = await appWith({ ORDERS_API_KEYS: next });
    expect((await getOrder(after, id, bearer(KEY.shop))).statusCode).toBe(401);
    expect((await getOrder(after, id, bearer(KEY.next))).statusCode).toBe(200);
  });

  it('leaves the signed webhook as it was: no key, its own signature', async () => {
    expect((await deliverWebhook(app, paymentEvent())).statusCode).toBe(200);
    expect((await deliverWebhook(app, paymentEvent(), { signature: null })).statusCode).toBe(401);
    // An orders key is no webhook credential.
    const withKey = await deliverWebhook(app, paymentEvent(), {
      signature: null,
      headers: bearer(KEY.shop),
    });
    expect(withKey.statusCode).toBe(401);
  });

  it('logs the key ID, never the key, and never the customer e-mail', async () => {
    const { lines, logger } = capturingLogger();
    const logged = await appWith({ ORDERS_API_KEYS: ALL_KEYS }, logger);
    const created = await postOrder(logged, bearer(KEY.shop));
    await getOrder(logged, created.json<{ id: number }>().id, bearer(KEY.support));
    await postOrder(logged, bearer(KEY.reader)); // 403
    await postOrder(logged, bearer(`${KEY.support}x`)); // 401
    const text = lines.join('\n');
    expect(text).toContain('"apiKeyId":"shop"');
    expect(text).toContain('"apiKeyId":"support"');
    for (const secret of Object.values(KEY)) expect(text).not.toContain(secret.slice(0, 20));
    expect(text).not.toContain('jane.doe');
  });
});

describe('the orders API without keys', () => {
  it('stays open in development on loopback, e-mail included, as before', async () => {
    const app = await appWith({});
    const created = await postOrder(app);
    expect(created.statusCode).toBe(201);
    const view = await getOrder(app, created.json<{ id: number }>().id);
    expect(view.json()).toHaveProperty('customer_email', 'jane.doe@example.com');
  });

  it('is not served at all with ORDERS_API=off; the webhook still is', async () => {
    const app = await appWith({ ORDERS_API: 'off', ORDERS_API_KEYS: ALL_KEYS });
    expect((await postOrder(app, bearer(KEY.shop))).statusCode).toBe(404);
    expect((await getOrder(app, 1, bearer(KEY.support))).statusCode).toBe(404);
    expect((await deliverWebhook(app, paymentEvent())).statusCode).toBe(200);
  });
});

// Hostile credentials on every protected route. None may get a 5xx, and the answer for an order
// that exists must equal the answer for one that does not: the check runs before any lookup.
describe('hostile credentials', () => {
  let app: FastifyInstance;
  let existing: number;
  beforeAll(async () => {
    app = await appWith({ ORDERS_API_KEYS: ALL_KEYS });
    existing = await existingOrderId(app);
  });

  const REQUIRED = 'an API key is required: send Authorization: Bearer <key>';
  const MALFORMED = 'the Authorization header must be: Bearer <key>';
  const INVALID = 'invalid API key';
  const hostile: Array<[string, Record<string, string | string[]>, string]> = [
    ['no credentials', {}, REQUIRED],
    [
      'the Basic scheme',
      { authorization: `Basic ${Buffer.from(`shop:${KEY.shop}`).toString('base64')}` },
      MALFORMED,
    ],
    ['the key without a scheme', { authorization: KEY.shop }, MALFORMED],
    ['an empty Bearer', { authorization: 'Bearer ' }, MALFORMED],
    [
      'two Authorization headers, each valid',
      { authorization: [`Bearer ${KEY.support}`, `Bearer ${KEY.shop}`] },
      'exactly one Authorization header is allowed',
    ],
    ['a 16 KB header', { authorization: `Bearer ${'a'.repeat(16 * 1024)}` }, INVALID],
    [
      'a 16 KB header made of the key',
      { authorization: `Bearer ${KEY.shop.repeat(460)}` },
      INVALID,
    ],
    ['a key with a NUL byte appended', { authorization: `Bearer ${KEY.shop}\u0000` }, INVALID],
    ['X-API-Key instead of Authorization', { 'x-api-key': KEY.shop }, REQUIRED],
  ];

  it.each(hostile)(
    'GET /api/v1/orders/:id with %s: 401, the same for any order',
    async (_label, headers, reason) => {
      const answers: LightMyRequestResponse[] = [];
      for (const id of [existing, existing + 10_000, 'not-a-number']) {
        answers.push(await getOrder(app, id, headers));
      }
      for (const answer of answers) {
        expect(answer.statusCode).toBe(401);
        expect(answer.json()).toEqual({ error: reason });
        expect(answer.headers['www-authenticate']).toBe(answers[0]!.headers['www-authenticate']);
      }
    },
  );

  it.each(hostile)(
    'POST /api/v1/orders with %s: 401, and no order is created',
    async (_label, headers, reason) => {
      const before = await countOrders();
      const answer = await postOrder(app, headers);
      expect([answer.statusCode, answer.json()]).toEqual([401, { error: reason }]);
      expect(await countOrders()).toBe(before);
    },
  );

  it('answers a key of another scope with 403, the same for any order', async () => {
    const writeOnly = await appWith({ ORDERS_API_KEYS: `w:${KEY.shop}:orders:write` });
    const answers = await Promise.all(
      [existing, existing + 10_000, 'x'].map((id) => getOrder(writeOnly, id, bearer(KEY.shop))),
    );
    expect(answers.map((a) => a.statusCode)).toEqual([403, 403, 403]);
    expect(new Set(answers.map((a) => a.body)).size).toBe(1);
    expect((await postOrder(app, bearer(KEY.support))).statusCode).toBe(403);
  });

  // Over a socket: Node's parser, not light-my-request, decides what a repeated or oversized
  // header becomes.
  it('over real HTTP: two header lines get 401, a 16 KB header 431 from Node; never 5xx', async () => {
    const served = await appWith({ ORDERS_API_KEYS: ALL_KEYS });
    await served.listen({ port: 0, host: '127.0.0.1' });
    const { port } = served.server.address() as AddressInfo;
    const send = (rawHeaders: string[]) =>
      new Promise<number>((resolve, reject) => {
        const req = httpRequest({
          host: '127.0.0.1',
          port,
          path: `/api/v1/orders/${existing}`,
          agent: false,
        });
        for (let i = 0; i < rawHeaders.length; i += 2) {
          const name = rawHeaders[i]!;
          const values = rawHeaders.filter((_, j) => j % 2 === 1 && rawHeaders[j - 1] === name);
          req.setHeader(name, values.length > 1 ? values : values[0]!);
        }
        req.on('response', (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        });
        req.on('error', reject);
        req.end();
      });
    expect(await send(['Authorization', `Bearer ${KEY.reader}`])).toBe(200);
    // The first line alone would pass (Node keeps only the first); both together do not.
    expect(
      await send(['Authorization', `Bearer ${KEY.reader}`, 'Authorization', `Bearer ${KEY.shop}`]),
    ).toBe(401);
    expect(await send(['Authorization', `Bearer ${'a'.repeat(16 * 1024)}`])).toBe(431);
  });
});

async function countOrders(): Promise<number> {
  const row = await db.db
    .selectFrom('orders')
    .select((eb) => eb.fn.countAll().as('n'))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
