import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker } from '@temporalio/worker';
import { buildWorkflowBundle } from '../../src/workers/workflow-bundle';
import { createOrdersRepository } from '../../src/db';
import { failureAlertWorkflowId } from '../../src/shared/alert';
import { orderWorkflowId } from '../../src/shared/order';
import {
  createPaymentWorker,
  resolveWorkflowBundlePath,
  WORKFLOW_BUNDLE_FILENAME,
} from '../../src/workers/payments';
import { testActivityDeps } from '../../harness/activity-deps';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { eventually } from './helpers';
import { createTestOrder, startPaymentWorkflow } from '../support/orders';
import { startPartners, type Partners } from '../support/stack';

// The prebuilt workflow bundle of `npm run build` (src/workers/workflow-bundle.ts): a worker
// that loads it instead of bundling at start-up runs the payment flow, interceptors included.
const sqlite = testDatabases.find((d) => d.name === 'sqlite')!;
let dir: string;
let env: TestWorkflowEnvironment;
let db: TestDatabaseHandle;
let partners: Partners;
let worker: Worker;
let running: Promise<void>;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'order-payments-bundle-'));
  env = await createDevServerEnv();
  db = await sqlite.create();
  partners = await startPartners();
  const bundle = await buildWorkflowBundle(path.join(dir, WORKFLOW_BUNDLE_FILENAME));
  expect(statSync(bundle.path).size).toBe(bundle.bytes);
  worker = await createPaymentWorker({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    activities: testActivityDeps(db, partners),
    workflowBundlePath: bundle.path,
  });
  running = worker.run();
});
afterAll(async () => {
  worker?.shutdown();
  await running;
  await partners?.close();
  await db?.close();
  await env?.teardown();
  rmSync(dir, { recursive: true, force: true });
});

const startPayment = (orderId: number) => startPaymentWorkflow(env.client, orderId, '1 minute');

it('completes a payment workflow on the prebuilt bundle', async () => {
  const order = await createTestOrder(createOrdersRepository(db.db));
  const payment = await startPayment(order.id);
  expect(await payment.result()).toMatchObject({
    created: true,
    orderWorkflowId: orderWorkflowId(order.id),
  });
  await env.client.workflow.getHandle(orderWorkflowId(order.id)).result();
  expect(partners.warehouse.requests.filter((r) => r.orderId === order.id)).toHaveLength(1);
});

it('carries the failure-alert interceptor inside the bundle', async () => {
  // The warehouse refuses the order: its workflow fails, and the interceptor starts its alert.
  const order = await createTestOrder(createOrdersRepository(db.db));
  partners.warehouse.setMode({ kind: 'reject', status: 400 }, 1);
  await (await startPayment(order.id)).result();
  const orderRun = env.client.workflow.getHandle(orderWorkflowId(order.id));
  await expect(orderRun.result()).rejects.toBeInstanceOf(WorkflowFailedError);
  const { runId } = await orderRun.describe();
  const alertId = failureAlertWorkflowId(orderWorkflowId(order.id), runId);
  await eventually(async () => {
    const alert = await env.client.workflow.getHandle(alertId).describe();
    expect(alert.type).toBe('alertWorkflow');
  });
});

describe('which bundle a worker loads', () => {
  it('takes dist/workflow-bundle.js beside the compiled worker, none when run from source', () => {
    expect(resolveWorkflowBundlePath(undefined, dir)).toBe(
      path.join(dir, WORKFLOW_BUNDLE_FILENAME),
    );
    const empty = mkdtempSync(path.join(tmpdir(), 'order-payments-nobundle-'));
    try {
      expect(resolveWorkflowBundlePath(undefined, empty)).toBeUndefined();
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });

  it('takes WORKFLOW_BUNDLE_PATH first, and refuses one that does not exist', () => {
    const custom = path.join(dir, 'custom-bundle.js');
    writeFileSync(custom, '');
    expect(resolveWorkflowBundlePath(custom, '/nonexistent')).toBe(custom);
    expect(() => resolveWorkflowBundlePath(path.join(dir, 'missing.js'))).toThrow(
      /WORKFLOW_BUNDLE_PATH: .*missing\.js does not exist; build it with npm run build/,
    );
  });
});
