import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { ConfigError, DEFAULT_ADMIN_ADDRESS, loadConfig } from '../../src/config';
import { buildAdminApp } from '../../src/http/admin';
import { type AppDeps, buildApp } from '../../src/http/app';
import { createHttpMetrics } from '../../src/http/metrics';
import { createLogger } from '../../src/logger';
import { codecEndpointFor } from '../../src/codec/data-converter';
import { PRODUCTION_ENV } from '../support/production-env';
import { recordingPaymentStarter, recordingUnmatched } from '../support/webhook';

// docs/security.md's endpoint table is the contract: every row is checked against the apps as
// production builds them, and a route served by either listener but missing from the table
// fails the test.

interface Row {
  method: string;
  path: string;
  listener: 'public' | 'admin';
  withoutCredentials: number;
}

function endpointTable(): Row[] {
  const doc = readFileSync(path.resolve(__dirname, '../../docs/security.md'), 'utf8');
  const rows: Row[] = [];
  for (const line of doc.split('\n')) {
    const match = /^\| `(GET|POST|PUT|PATCH|DELETE|OPTIONS) (\/[^`]*)` +\|(.*)\|$/.exec(line);
    if (!match) continue;
    const cells = match[3]!.split(' | ').map((c) => c.trim());
    const listener = cells[0];
    const status = Number(cells.at(-1));
    if ((listener !== 'public' && listener !== 'admin') || !Number.isInteger(status)) {
      throw new Error(`docs/security.md: unreadable endpoint row: ${line}`);
    }
    rows.push({ method: match[1]!, path: match[2]!, listener, withoutCredentials: status });
  }
  return rows;
}

/** "METHOD /path" of every route an app serves, from Fastify's own route tree (HEAD left out). */
function servedRoutes(app: FastifyInstance): string[] {
  const routes: string[] = [];
  const prefixes: string[] = [];
  for (const line of app.printRoutes({ commonPrefix: false }).split('\n')) {
    const match = /^([│ ]*)[├└]── (\S+)(?: \(([^)]*)\))?/.exec(line);
    if (!match) continue;
    const depth = match[1]!.length / 4;
    prefixes.length = depth;
    const full = prefixes.join('') + match[2]!;
    prefixes.push(match[2]!);
    for (const method of (match[3] ?? '').split(', ').filter(Boolean)) {
      if (method !== 'HEAD') routes.push(`${method} ${full}`);
    }
  }
  return routes.sort();
}

// Any lookup before the credential check would throw here, and show as a 500.
const noLookups = new Proxy(
  {},
  {
    get() {
      throw new Error('an unauthenticated request reached the database');
    },
  },
);

const production = loadConfig({
  ...PRODUCTION_ENV,
  HOST: '0.0.0.0',
  ORDERS_API_KEYS: 'shop:0123456789abcdef0123456789abcdef:orders:read+orders:write',
  PAYLOAD_ENCRYPTION_KEY: `k1:${Buffer.alloc(32, 9).toString('base64')}`,
  CODEC_AUTH_TOKEN: 'a-long-random-codec-token',
  STRIPE_WEBHOOK_SECRETS: 'whsec_a_real_stripe_endpoint_secret_01',
  STANDARD_WEBHOOK_SECRETS: `whsec_${Buffer.alloc(24, 7).toString('base64')}`,
  SHOP_CURRENCY: 'jpy',
});

const rows = endpointTable();
let apps: Record<Row['listener'], FastifyInstance>;

beforeAll(async () => {
  const logger = createLogger({ LOG_LEVEL: 'silent' });
  const metrics = createHttpMetrics();
  apps = {
    public: await buildApp({
      config: production,
      logger,
      payments: recordingPaymentStarter(),
      unmatchedRepository: recordingUnmatched(),
      ordersRepository: noLookups as AppDeps['ordersRepository'],
      paymentsRepository: noLookups as AppDeps['paymentsRepository'],
      metrics,
      codec: codecEndpointFor(production),
    }),
    admin: await buildAdminApp({ logger, metrics }),
  };
});
afterAll(async () => {
  await Promise.all(Object.values(apps ?? {}).map((app) => app.close()));
});

it('reads a row for each endpoint the issue names', () => {
  const listed = rows.map((r) => `${r.listener} ${r.method} ${r.path}`);
  expect(listed).toEqual(
    expect.arrayContaining([
      'public POST /api/v1/webhooks/payment',
      'public POST /api/v1/webhooks/stripe',
      'public POST /api/v1/webhooks/standard',
      'public POST /api/v1/orders',
      'public GET /api/v1/orders/:id',
      'public GET /healthz',
      'public POST /codec/decode',
      'admin GET /readyz',
      'admin GET /metrics',
    ]),
  );
});

it.each(['public', 'admin'] as const)(
  'serves on the %s listener exactly the routes the table lists for it',
  (listener) => {
    const listed = rows
      .filter((r) => r.listener === listener)
      .map((r) => `${r.method} ${r.path}`)
      .sort();
    expect(servedRoutes(apps[listener])).toEqual(listed);
  },
);

describe.each(rows)('$method $path ($listener)', (row) => {
  const url = row.path.replace(':id', '1');

  it(`answers ${row.withoutCredentials} without credentials`, async () => {
    const response = await apps[row.listener].inject({
      method: row.method as 'GET',
      url,
      ...(row.method === 'POST' ? { payload: {} } : {}),
    });
    expect(response.statusCode).toBe(row.withoutCredentials);
  });

  if (
    row.listener === 'admin' &&
    !rows.some((r) => r.listener === 'public' && r.path === row.path)
  ) {
    it('is not served on the public listener', async () => {
      const response = await apps.public.inject({ method: row.method as 'GET', url });
      expect(response.statusCode).toBe(404);
    });
  }
});

it('says nothing internal on the public /healthz', async () => {
  const response = await apps.public.inject({ method: 'GET', url: '/healthz' });
  expect(response.json()).toEqual({ status: 'ok' });
});

it('takes ADMIN_ADDRESS as host:port or off, loopback by default', () => {
  expect(loadConfig({}).ADMIN_ADDRESS).toBe(DEFAULT_ADMIN_ADDRESS);
  expect(DEFAULT_ADMIN_ADDRESS).toMatch(/^127\.0\.0\.1:/);
  expect(loadConfig({ ADMIN_ADDRESS: 'off' }).ADMIN_ADDRESS).toBe('off');
  expect(loadConfig({ ADMIN_ADDRESS: '[::1]:9465' }).ADMIN_ADDRESS).toBe('[::1]:9465');
  expect(() => loadConfig({ ADMIN_ADDRESS: 'http://0.0.0.0:9465' })).toThrow(ConfigError);
  expect(() => loadConfig({ ADMIN_ADDRESS: '9465' })).toThrow(
    /ADMIN_ADDRESS: must be host:port \(e\.g\. 127\.0\.0\.1:9465\) or off/,
  );
});
