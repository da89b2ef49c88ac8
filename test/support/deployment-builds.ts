import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker, WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { loadConfig } from '../../src/config';
import { WATCHED_TASK_QUEUES } from '../../src/monitoring';
import { describeBuildPollers } from '../../src/monitoring/build-pollers';
import { waitForBuild } from '../../src/temporal/deployments';
import { buildIdOf, type WorkerDeployment } from '../../src/workers/deployment';
import { createHeavyWorker, heavyActivityDepsFromConfig } from '../../src/workers/heavy';
import { activityDepsFromConfig, createPaymentWorker } from '../../src/workers/payments';
import { createDevServerEnv, type DevServerEnvOptions } from '../../harness/temporal/test-env';
import { prebuilt, workflowBundle, workflowBundleSwapping } from './bundles';
import { eventually } from './eventually';
import { startPaymentStack, TEST_MAIL_FROM, type PaymentStack } from './stack';
import { deliverWebhook } from './webhook';

// Builds of the workers side by side in one Worker Deployment on a dev server, as an operator
// rolls one out or back (test/deploys): build A is the production code, build B the payment
// workflow with a step added. The stack runs no worker of its own (`worker: false`).

/** The Worker Deployment every build joins: WORKER_DEPLOYMENT_NAME's default. */
const DEPLOYMENT_NAME = 'order-payments';

/**
 * The bundles of build A, the production workflows, and of build B, the same with ./payment
 * swapped for the fixture that adds a timer in front.
 */
export function bundlesOfBuildsAandB(): Promise<
  [WorkflowBundleWithSourceMap, WorkflowBundleWithSourceMap]
> {
  const buildB = workflowBundleSwapping({
    request: /^\.\/payment$/,
    fixture: require.resolve('../deploys/fixtures/payment-after-pause'),
    importedFrom: (context) => context.endsWith(`${path.sep}src${path.sep}workflows`),
  });
  return Promise.all([workflowBundle(), buildB]);
}

export interface DeploymentBuilds {
  /** The dev server, with Worker Deployments on. */
  env: TestWorkflowEnvironment;
  /** Database, partners and app; the builds' workers run its activities. */
  stack: PaymentStack;
  /** The Worker Deployment the builds join. */
  deploymentName: string;
  /** Pays a new order of 100 through the webhook; returns the order's ID and the event's. */
  pay(eventId: string): Promise<{ orderId: number; eventId: string }>;
  /**
   * Starts the payments and heavy workers of the build of `bundle`, as src/worker.ts and
   * src/heavy-worker.ts run them (identity `build-<build ID>`, which the histories' activity
   * starts carry), and returns once each of its four pollers (two queues, two task types) has
   * polled: `deployment current` and `ramp` refuse a build until then.
   */
  start(bundle: WorkflowBundleWithSourceMap): Promise<WorkerDeployment>;
  /** Stops the workers of one build, as a deploy that retires it does. */
  stop(buildId: string): Promise<void>;
  /** Stops every build still running, then the stack and the server. */
  close(): Promise<void>;
}

/** A dev server and a payment stack without workers, for builds to join: none runs yet. */
export async function startDeploymentBuilds(
  server: DevServerEnvOptions = {},
): Promise<DeploymentBuilds> {
  const env = await createDevServerEnv(server);
  const stack = await startPaymentStack(env, { worker: false, startTimeoutMs: 10_000 }).catch(
    async (error: unknown) => {
      await env.teardown();
      throw error;
    },
  );
  const invoiceDir = await mkdtemp(path.join(os.tmpdir(), 'deployment-invoices-'));
  const namespace = env.namespace ?? 'default';
  const config = loadConfig({
    NODE_ENV: 'test',
    MAIL_FROM: TEST_MAIL_FROM,
    INVOICE_DIR: invoiceDir,
  });
  const running = new Map<string, Array<{ worker: Worker; run: Promise<void> }>>();

  async function start(bundle: WorkflowBundleWithSourceMap): Promise<WorkerDeployment> {
    const deployment = {
      deploymentName: DEPLOYMENT_NAME,
      buildId: buildIdOf(bundle.code),
      useWorkerVersioning: true,
    };
    const common = {
      connection: env.nativeConnection,
      namespace,
      deployment,
      overrides: { ...prebuilt(bundle), identity: `build-${deployment.buildId}` },
    };
    const payments = await createPaymentWorker({
      ...common,
      activities: activityDepsFromConfig(config, stack.db, {
        warehouseUrl: stack.warehouseUrl,
        temporalUiUrl: undefined,
        smtpUrl: stack.smtp.url,
      }),
    });
    const heavy = await createHeavyWorker({
      ...common,
      activities: heavyActivityDepsFromConfig(config, stack.db, { temporalUiUrl: undefined }),
    });
    running.set(
      deployment.buildId,
      [payments, heavy].map((worker) => ({ worker, run: worker.run() })),
    );
    await waitForBuild(env.client, deployment);
    await eventually(async () => {
      const pollers = await describeBuildPollers(
        env.client.connection,
        namespace,
        deployment,
        WATCHED_TASK_QUEUES,
      );
      expect(pollers.missing).toEqual([]);
    });
    return deployment;
  }

  async function stop(buildId: string): Promise<void> {
    const workers = running.get(buildId) ?? [];
    running.delete(buildId);
    for (const { worker } of workers) worker.shutdown();
    await Promise.all(workers.map((w) => w.run));
  }

  return {
    env,
    stack,
    deploymentName: DEPLOYMENT_NAME,
    pay: (eventId) => payThroughWebhook(stack, eventId),
    start,
    stop,
    async close() {
      await Promise.allSettled([...running.keys()].map(stop));
      await stack.close();
      await env.teardown();
      await rm(invoiceDir, { recursive: true, force: true });
    },
  };
}

async function payThroughWebhook(
  stack: PaymentStack,
  eventId: string,
): Promise<{ orderId: number; eventId: string }> {
  const { order } = await stack.orders.createWithIdempotencyKey({
    userId: 1,
    customerEmail: 'buyer@example.com',
    totalAmount: 100,
  });
  const reply = await deliverWebhook(stack.app, {
    id: eventId,
    event: 'payment.succeeded',
    order_id: order.id,
    amount: 100,
  });
  expect(reply.statusCode).toBe(200);
  return { orderId: order.id, eventId };
}
