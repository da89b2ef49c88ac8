import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { FastifyInstance } from 'fastify';
import { type AdminAppDeps, buildAdminApp } from '../../src/http/admin';
import { databaseReadiness, temporalReadiness } from '../../src/http/health';
import { createHttpMetrics } from '../../src/http/metrics';
import { createLazyClient } from '../../src/temporal/connection';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { silentLogger } from '../support/app';

// /healthz: the process answers. /readyz: the database and Temporal answer within a short
// deadline, else 503, so a load balancer stops sending webhooks to a process that cannot queue them.
// Both on the admin listener (src/http/admin.ts); the public app's /healthz is in endpoints.test.ts.
const sqlite = testDatabases.find((d) => d.name === 'sqlite')!;
let env: TestWorkflowEnvironment;
let db: TestDatabaseHandle;
let app: FastifyInstance | undefined;

beforeAll(async () => {
  env = await createDevServerEnv();
  db = await sqlite.create();
});
afterAll(async () => {
  await db?.close();
  await env?.teardown();
});
afterEach(async () => {
  await app?.close();
  app = undefined;
});

/** GET /readyz of an admin app with these checks. */
async function readyz(...checks: NonNullable<AdminAppDeps['readiness']>) {
  app = await build(checks);
  return app.inject({ method: 'GET', url: '/readyz' });
}

function build(readiness: AdminAppDeps['readiness']): Promise<FastifyInstance> {
  return buildAdminApp({
    logger: silentLogger(),
    readiness,
    metrics: createHttpMetrics(),
  });
}

it('is ready (200) when the database and Temporal both answer', async () => {
  const response = await readyz(databaseReadiness(db.db), temporalReadiness(env.client.connection));
  expect(response.statusCode).toBe(200);
  expect(response.json()).toEqual({
    status: 'ready',
    checks: { database: 'ok', temporal: 'ok' },
  });
});

it('stays ready (200) on an advisory check that fails, naming it with its reason', async () => {
  const response = await readyz(databaseReadiness(db.db), {
    name: 'workers',
    advisory: true,
    explain: true,
    check: () => Promise.reject(new Error('no live worker of build b1 polls heavy')),
  });
  expect(response.statusCode).toBe(200);
  expect(response.json()).toEqual({
    status: 'ready',
    checks: { database: 'ok', workers: 'failed' },
    reasons: { workers: 'no live worker of build b1 polls heavy' },
    warnings: ['workers'],
  });
});

it('is not ready (503) within the deadline when Temporal is unreachable, and stays live', async () => {
  const unreachable = createLazyClient({ address: '127.0.0.1:1', namespace: 'default' });
  try {
    app = await build([databaseReadiness(db.db), temporalReadiness(unreachable.connection)]);
    const started = Date.now();
    const response = await app.inject({ method: 'GET', url: '/readyz' });
    // The lazy connection would keep trying for 20 s; the probe answers after its 2 s deadline.
    expect(Date.now() - started).toBeLessThan(5_000);
    expect(response.statusCode).toBe(503);
    expect(response.json()).toEqual({
      status: 'unavailable',
      checks: { database: 'ok', temporal: 'timeout' },
    });
    // Liveness does not depend on Temporal: restarting the process would not bring it back.
    const live = await app.inject({ method: 'GET', url: '/healthz' });
    expect(live.statusCode).toBe(200);
  } finally {
    // The app first: closing waits for the probe's call, which the connection must outlive.
    await app?.close();
    app = undefined;
    await unreachable.connection.close();
  }
});

it('is not ready (503) when the database fails', async () => {
  const closed = await sqlite.create();
  await closed.close();
  const response = await readyz(
    databaseReadiness(closed.db),
    temporalReadiness(env.client.connection),
  );
  expect(response.statusCode).toBe(503);
  expect(response.json()).toEqual({
    status: 'unavailable',
    checks: { database: 'failed', temporal: 'ok' },
  });
});

it('keeps /healthz and a /readyz without checks for callers that pass no readiness', async () => {
  app = await build(undefined);
  expect((await app.inject({ method: 'GET', url: '/healthz' })).json()).toEqual({ status: 'ok' });
  expect((await app.inject({ method: 'GET', url: '/readyz' })).statusCode).toBe(200);
});
