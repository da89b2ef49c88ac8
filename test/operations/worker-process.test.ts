import { hostname } from 'node:os';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { createOrdersRepository } from '../../src/db';
import { PAYMENTS_TASK_QUEUE, paymentWorkflowId } from '../../src/shared/constants';
import { orderWorkflowId } from '../../src/shared/order';
import { createPaymentWorker } from '../../src/workers/payments';
import { testActivityDeps } from '../../harness/activity-deps';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { uniqueEventId } from '../support/webhook';
import { eventually, freePort, spawnWorker, stopWorker, type WorkerProcess } from './helpers';
import { startPartners, type Partners } from '../support/stack';
import { createTestOrder, startPaymentWorkflow } from '../support/orders';

// The production worker entry (src/worker.ts) as a process of its own, the way systemd or
// Kubernetes run it: its Prometheus and health endpoints, and its shutdown on SIGTERM. A child
// process also gets a Temporal Runtime of its own (one per process, and jest's setup installs one).
const sqlite = testDatabases.find((d) => d.name === 'sqlite')!;
let env: TestWorkflowEnvironment;
let db: TestDatabaseHandle;
let partners: Partners;
/** Resolves the next time the warehouse starts answering a request. */
let onWarehouseRequest: (() => void) | undefined;

beforeAll(async () => {
  env = await createDevServerEnv();
  db = await sqlite.create();
  partners = await startPartners((warehouse) =>
    warehouse.app.addHook('onRequest', async () => onWarehouseRequest?.()),
  );
});
afterAll(async () => {
  await partners?.close();
  await db?.close();
  await env?.teardown();
});

// Every worker process here declares one build, and so does the in-process successor below: the
// first to poll makes it current, and a run started by one of them is pinned to it.
const BUILD_ID = 'worker-process-test';

function workerEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return {
    PATH: process.env.PATH,
    WORKER_BUILD_ID: BUILD_ID,
    NODE_ENV: 'development',
    LOG_LEVEL: 'info',
    TEMPORAL_ADDRESS: env.address,
    TEMPORAL_NAMESPACE: env.namespace ?? 'default',
    DATABASE_URL: db.url,
    WAREHOUSE_API_URL: partners.warehouseUrl,
    SMTP_URL: partners.smtp.url,
    ...extra,
  };
}

async function createOrder(): Promise<number> {
  const order = await createTestOrder(createOrdersRepository(db.db));
  return order.id;
}

const startPayment = (orderId: number) => startPaymentWorkflow(env.client, orderId, '2 minutes');

describe('worker process', () => {
  let worker: WorkerProcess | undefined;
  afterEach(async () => {
    if (worker && worker.child.exitCode === null) worker.child.kill('SIGKILL');
    worker = undefined;
  });
  /** Spawns the test's worker with its health endpoints on a free port: it, and their URL. */
  const spawnWithHealth = async (extra: NodeJS.ProcessEnv) => {
    const port = await freePort();
    worker = spawnWorker(workerEnv({ ...extra, WORKER_HEALTH_ADDRESS: `127.0.0.1:${port}` }));
    return { spawned: worker, health: `http://127.0.0.1:${port}` };
  };

  it('serves the SDK metrics (temporal_…) and its health, and exits 0 on SIGTERM', async () => {
    const metricsPort = await freePort();
    const { spawned, health } = await spawnWithHealth({
      WORKER_METRICS_ADDRESS: `127.0.0.1:${metricsPort}`,
    });
    await eventually(
      async () => {
        const ready = await fetch(`${health}/readyz`);
        expect(ready.status).toBe(200);
      },
      { timeoutMs: 60_000 },
    );
    const live = await fetch(`${health}/healthz`);
    expect(live.status).toBe(200);
    expect(await live.json()).toEqual({ status: 'ok', workers: ['RUNNING'] });

    const orderId = await createOrder();
    const payment = await startPayment(orderId);
    await payment.result();
    await env.client.workflow.getHandle(orderWorkflowId(orderId)).result();

    const metrics = await eventually(async () => {
      const response = await fetch(`http://127.0.0.1:${metricsPort}/metrics`);
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(text).toMatch(/^temporal_workflow_completed\{.*task_queue="payments".*\} [1-9]/m);
      return text;
    });
    expect(metrics).toMatch(/^temporal_activity_execution_latency_(count|bucket)\{/m);
    expect(metrics).toContain('activity_type="notifyWarehouse"');

    expect(await stopWorker(spawned)).toBe(0);
    await expect(fetch(`${health}/healthz`)).rejects.toThrow();
  });

  it('finishes an in-flight activity after SIGTERM before it exits 0', async () => {
    worker = spawnWorker(workerEnv());
    await eventually(
      async () => {
        const queue = await env.client.workflowService.describeTaskQueue({
          namespace: env.namespace ?? 'default',
          taskQueue: { name: PAYMENTS_TASK_QUEUE },
          taskQueueType: 2,
        });
        const fresh = (queue.pollers ?? []).filter((p) =>
          p.identity?.startsWith(`${worker!.child.pid}@`),
        );
        expect(fresh).not.toHaveLength(0);
      },
      { timeoutMs: 60_000 },
    );

    // The warehouse takes 3 s to answer (the HTTP client waits up to 5 s, the activity 8 s).
    partners.warehouse.setMode({ kind: 'slow', delayMs: 3_000 }, 1);
    const reached = new Promise<void>((resolve) => (onWarehouseRequest = resolve));
    const orderId = await createOrder();
    const payment = await startPayment(orderId);
    await reached;
    onWarehouseRequest = undefined;
    const signalledAt = Date.now();

    // SIGTERM while the warehouse call is in flight: the worker stops polling, lets the call
    // finish, reports its result, and only then exits, with 0.
    expect(await stopWorker(worker)).toBe(0);
    expect(Date.now() - signalledAt).toBeGreaterThan(2_000);
    expect(worker.output()).toContain('shutting down worker: finishing in-flight activities');
    expect(partners.warehouse.requests.filter((r) => r.orderId === orderId)).toEqual([
      expect.objectContaining({ status: 201 }),
    ]);
    const order = env.client.workflow.getHandle(orderWorkflowId(orderId));
    const history = await order.fetchHistory();
    const completed = (history.events ?? []).filter((e) => e.activityTaskCompletedEventAttributes);
    const started = (history.events ?? []).filter((e) => e.activityTaskStartedEventAttributes);
    expect(completed.length).toBeGreaterThan(0);
    expect(started.map((e) => e.activityTaskStartedEventAttributes?.identity)).toContain(
      `${worker.child.pid}@${hostname()}`,
    );

    // Another worker of the same build picks up the rest (the run is pinned to that build): the
    // order completes, with that one warehouse call.
    const successor: Worker = await createPaymentWorker({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      activities: testActivityDeps(db, partners),
      deployment: {
        deploymentName: 'order-payments',
        buildId: BUILD_ID,
        useWorkerVersioning: true,
      },
    });
    await successor.runUntil(async () => {
      await payment.result();
      await order.result();
    });
    expect(partners.warehouse.requests.filter((r) => r.orderId === orderId)).toHaveLength(1);
    // The confirmation went out over the worker's pooled SMTP connection, closed when the worker
    // stopped (left idle, it would linger for the 3 s step timeout and hold the process open).
    expect(
      partners.smtp.messages.filter((m) =>
        m.messageId?.startsWith(`<order-${orderId}-confirmation@`),
      ),
    ).toHaveLength(1);
    await eventually(() => expect(partners.smtp.openConnections).toBe(0), { timeoutMs: 1_000 });
  });

  it('waits for a Temporal that is not up yet (live, not ready), then polls as soon as it answers', async () => {
    const port = await freePort();
    const { spawned, health } = await spawnWithHealth({ TEMPORAL_ADDRESS: `127.0.0.1:${port}` });
    await eventually(() =>
      expect(spawned.output()).toContain('Temporal is not reachable yet; waiting for it'),
    );
    expect(spawned.child.exitCode).toBeNull();
    // A startup or liveness probe must not restart a worker that only waits for Temporal.
    expect((await fetch(`${health}/healthz`)).status).toBe(200);
    expect((await fetch(`${health}/readyz`)).status).toBe(503);

    const late = await createDevServerEnv({ port });
    try {
      const orderId = await createOrder();
      const eventId = uniqueEventId();
      const payment = await late.client.workflow.start('paymentWorkflow', {
        taskQueue: PAYMENTS_TASK_QUEUE,
        workflowId: paymentWorkflowId(eventId),
        args: [{ eventId, orderId, amount: 5400 }],
        workflowExecutionTimeout: '2 minutes',
      });
      await expect(payment.result()).resolves.toMatchObject({ created: true });
      await late.client.workflow.getHandle(orderWorkflowId(orderId)).result();
      expect(partners.warehouse.requests.filter((r) => r.orderId === orderId)).toHaveLength(1);
      expect((await fetch(`${health}/readyz`)).status).toBe(200);
      expect(await stopWorker(spawned)).toBe(0);
    } finally {
      await late.teardown();
    }
  });

  it('exits 0 on SIGTERM while it is still waiting for Temporal', async () => {
    worker = spawnWorker(workerEnv({ TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}` }));
    await eventually(() =>
      expect(worker!.output()).toContain('Temporal is not reachable yet; waiting for it'),
    );
    expect(await stopWorker(worker)).toBe(0);
    expect(worker.output()).toContain('stopped before Temporal was reachable');
  });
});
