import { existsSync } from 'node:fs';
import path from 'node:path';
import { Client } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities';
import { crashPointInterceptors } from '../activities/crash-points';
import { createMailPool } from '../activities/mail-activities';
import { createStripeClient } from '../activities/stripe-api-activities';
import { createWarehouseClient } from '../activities/warehouse-client';
import type { Config } from '../config';
import {
  createAlertDeliveriesRepository,
  createLoyaltyRepository,
  createRefundsRepository,
  createDisputesRepository,
  createSettlementsRepository,
  createOrdersRepository,
  createPartnerPausesRepository,
  createPaymentsRepository,
  createUnmatchedRepository,
  type DatabaseHandle,
} from '../db';
import { PAYMENTS_TASK_QUEUE } from '../shared/constants';
import { workerDeploymentOptions, type WorkerDeployment } from './deployment';

export type WorkerActivityDeps = Omit<ActivityDeps, 'client'>;

/**
 * The confirmation mail's 15 s (RetryPolicies.confirmationMail). Only the attempt in flight
 * counts: a retry is the server's, on any worker. Raise it with any longer activity on this
 * queue; test/operations/worker-settings.test.ts compares it with the presets.
 */
export const LONGEST_PAYMENTS_ACTIVITY_TIMEOUT_MS = 15_000;

/**
 * On SIGTERM in-flight activities get this long: no attempt is cut short by a deploy and retried
 * beside a half-done original. Process managers must wait longer (deploy/: TimeoutStopSec).
 */
export const PAYMENTS_WORKER_SHUTDOWN_GRACE_MS = LONGEST_PAYMENTS_ACTIVITY_TIMEOUT_MS + 30_000;

/**
 * Then cancelled activities get this long to acknowledge before `run()` gives up (exit 1) rather
 * than hang; counted from the shutdown, so the worker drains within a minute of SIGTERM.
 */
export const PAYMENTS_WORKER_SHUTDOWN_FORCE_MS = PAYMENTS_WORKER_SHUTDOWN_GRACE_MS + 15_000;

export const WORKFLOW_BUNDLE_FILENAME = 'workflow-bundle.js';

export const PAYMENT_WORKFLOW_MODULES = {
  workflowsPath: require.resolve('../workflows'),
  // One alert for every workflow that ends Failed, whatever its type (src/workflows/interceptors.ts).
  interceptorModules: [require.resolve('../workflows/interceptors')],
};

export interface SharedWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue?: string;
  /** A bundle built by `npm run build` (no webpack at start-up); unset: bundled from source. */
  workflowBundlePath?: string;
  workflowCode?: string;
  /** Worker Versioning (./deployment.ts); unset: unversioned (the time-skipping test server). */
  deployment?: WorkerDeployment;
  /** Payload encryption (src/codec/data-converter.ts); unset: payloads in clear. */
  dataConverter?: DataConverter;
  overrides?: Partial<WorkerOptions>;
}

export interface PaymentWorkerOptions extends SharedWorkerOptions {
  activities: WorkerActivityDeps;
  maxConcurrentActivities?: number;
  maxConcurrentWorkflowTasks?: number;
}

export function sharedWorkerOptions(options: SharedWorkerOptions) {
  return {
    connection: options.connection,
    namespace: options.namespace,
    ...workflowCodeOptions(options.workflowBundlePath, options.workflowCode),
    workerDeploymentOptions: options.deployment && workerDeploymentOptions(options.deployment),
    dataConverter: options.dataConverter,
  };
}

export function workerClient(options: SharedWorkerOptions): Client {
  const { connection, namespace, dataConverter } = options;
  return new Client({ connection, namespace, dataConverter });
}

/** Built from its dependencies so tests and the dev stack create it as production does. */
export async function createPaymentWorker(options: PaymentWorkerOptions): Promise<Worker> {
  // Reused across confirmations; none opened until a mail.
  const { smtpUrl, maxConnections } = options.activities.mail;
  const mailPool = createMailPool(smtpUrl, { maxConnections });
  let worker: Worker;
  try {
    worker = await Worker.create({
      ...sharedWorkerOptions(options),
      taskQueue: options.taskQueue ?? PAYMENTS_TASK_QUEUE,
      activities: createActivities({
        ...options.activities,
        mail: { ...options.activities.mail, pool: mailPool },
        client: workerClient(options),
      }),
      maxConcurrentActivityTaskExecutions: options.maxConcurrentActivities,
      maxConcurrentWorkflowTaskExecutions: options.maxConcurrentWorkflowTasks,
      shutdownGraceTime: PAYMENTS_WORKER_SHUTDOWN_GRACE_MS,
      shutdownForceTime: PAYMENTS_WORKER_SHUTDOWN_FORCE_MS,
      ...options.overrides,
    });
  } catch (error) {
    mailPool.close();
    throw error;
  }
  // Once stopped, idle connections would only keep the process alive.
  const run = worker.run.bind(worker);
  worker.run = () => run().finally(() => mailPool.close());
  return worker;
}

/**
 * A prebuilt bundle already holds the interceptors; without one the worker bundles from source
 * (seconds). The activity interceptors are the crash points' (none in production).
 */
export function workflowCodeOptions(
  bundlePath: string | undefined,
  code?: string,
): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath' | 'interceptors'> {
  const activity = crashPointInterceptors;
  if (code !== undefined) return { workflowBundle: { code }, interceptors: { activity } };
  if (bundlePath) return { workflowBundle: { codePath: bundlePath }, interceptors: { activity } };
  return {
    workflowsPath: PAYMENT_WORKFLOW_MODULES.workflowsPath,
    interceptors: { workflowModules: PAYMENT_WORKFLOW_MODULES.interceptorModules, activity },
  };
}

const ENTRY_DIR = path.resolve(__dirname, '..');

/**
 * WORKFLOW_BUNDLE_PATH (must exist), else `workflow-bundle.js` beside the compiled entries; run
 * from src/ there is none, so a stale bundle in dist/ never stands in for the edited source.
 */
export function resolveWorkflowBundlePath(
  setting: string | undefined,
  moduleDir: string = ENTRY_DIR,
): string | undefined {
  if (setting) {
    const file = path.resolve(setting);
    if (!existsSync(file)) {
      throw new Error(
        `WORKFLOW_BUNDLE_PATH: ${file} does not exist; build it with npm run build, or unset it`,
      );
    }
    return file;
  }
  const beside = path.join(moduleDir, WORKFLOW_BUNDLE_FILENAME);
  return existsSync(beside) ? beside : undefined;
}

export function activityDepsFromConfig(
  config: Config,
  db: DatabaseHandle,
  urls: { warehouseUrl: string; temporalUiUrl: string | undefined; smtpUrl: string },
): WorkerActivityDeps {
  return {
    payments: createPaymentsRepository(db.db),
    orders: createOrdersRepository(db.db),
    loyalty: createLoyaltyRepository(db.db),
    refunds: createRefundsRepository(db.db),
    partnerPauses: createPartnerPausesRepository(db.db),
    disputes: createDisputesRepository(db.db),
    settlements: createSettlementsRepository(db.db),
    mail: {
      smtpUrl: urls.smtpUrl,
      from: config.MAIL_FROM,
      maxConnections: config.SMTP_MAX_CONNECTIONS,
    },
    warehouse: createWarehouseClient({
      baseUrl: urls.warehouseUrl,
      timeoutMs: config.WAREHOUSE_TIMEOUT_MS,
    }),
    alerts: {
      ...alertDepsFromConfig(config, db, urls),
      sla: {
        fulfilmentMs: config.FULFILMENT_SLA_SECONDS * 1000,
        paymentMs: config.PAYMENT_SLA_SECONDS * 1000,
      },
    },
    stripeApi: {
      stripe: config.STRIPE_API_KEY
        ? createStripeClient({ apiKey: config.STRIPE_API_KEY, baseUrl: config.STRIPE_API_BASE_URL })
        : undefined,
      unmatched: createUnmatchedRepository(db.db),
      shopCurrency: config.SHOP_CURRENCY,
    },
  };
}

export function alertDepsFromConfig(
  config: Config,
  db: DatabaseHandle,
  urls: { temporalUiUrl: string | undefined },
) {
  return {
    alertWebhookUrl: config.ALERT_WEBHOOK_URL,
    temporalUiUrl: urls.temporalUiUrl,
    deliveries: createAlertDeliveriesRepository(db.db),
    digestTiming: {
      windowMs: config.ALERT_DIGEST_WINDOW_SECONDS * 1000,
      quietMs: config.ALERT_DIGEST_QUIET_SECONDS * 1000,
    },
  };
}
