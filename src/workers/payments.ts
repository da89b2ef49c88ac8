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
 * The longest start-to-close timeout of any activity the `payments` worker runs: the confirmation
 * mail (RetryPolicies.confirmationMail in src/shared/retry-policies.ts, 15 s). Only one attempt
 * counts: the grace time protects the attempt in flight, and a retry is scheduled by the server,
 * on whichever worker polls, so schedule-to-close deadlines do not matter here. The stock
 * aggregation (10 minutes) runs on `heavy`, not here (src/workflows/stock.ts). Raise this with
 * any longer activity on this queue; test/operations/worker-settings.test.ts compares it with
 * the presets.
 */
export const LONGEST_PAYMENTS_ACTIVITY_TIMEOUT_MS = 15_000;

/**
 * On SIGTERM the worker stops polling and lets in-flight activities finish for this long before
 * it cancels them: the longest activity timeout, plus time to report the result. Within it no
 * attempt is cut short by a deploy, so none is retried beside a half-done original. Process
 * managers must wait longer still (deploy/: TimeoutStopSec, terminationGracePeriodSeconds).
 */
export const PAYMENTS_WORKER_SHUTDOWN_GRACE_MS = LONGEST_PAYMENTS_ACTIVITY_TIMEOUT_MS + 30_000;

/**
 * Past the grace time, cancelled activities get this long to acknowledge before `run()` gives up
 * (GracefulShutdownPeriodExpiredError, exit 1) rather than hang the process forever. Counted
 * from the shutdown, like the grace time: the worker has drained within a minute of SIGTERM.
 */
export const PAYMENTS_WORKER_SHUTDOWN_FORCE_MS = PAYMENTS_WORKER_SHUTDOWN_GRACE_MS + 15_000;

/** Where `npm run build` writes the workflow bundle: next to the compiled worker, dist/. */
export const WORKFLOW_BUNDLE_FILENAME = 'workflow-bundle.js';

/** The workflow code of this worker: what the bundle build packs and what the worker loads. */
export const PAYMENT_WORKFLOW_MODULES = {
  workflowsPath: require.resolve('../workflows'),
  // One alert for every workflow that ends Failed, whatever its type (src/workflows/interceptors.ts).
  interceptorModules: [require.resolve('../workflows/interceptors')],
};

export interface PaymentWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  /** Everything but the Temporal client, which is made on the worker's own connection. */
  activities: WorkerActivityDeps;
  taskQueue?: string;
  /** A bundle built by `npm run build` (no webpack at start-up); unset: bundled from source. */
  workflowBundlePath?: string;
  /** The bundle's code, already loaded (loadVersionedWorkflowCode); wins over workflowBundlePath. */
  workflowCode?: string;
  /**
   * The build this worker declares (Worker Versioning, ./deployment.ts). Every process entry sets
   * it; unset, the worker is unversioned (tests on the time-skipping server, which has none).
   */
  deployment?: WorkerDeployment;
  /** Activity slots (default: the SDK's, 100). */
  maxConcurrentActivities?: number;
  /** Workflow task slots (default: the SDK's, 40). */
  maxConcurrentWorkflowTasks?: number;
  /** Payload encryption (src/temporal/data-converter.ts); unset: payloads in clear. */
  dataConverter?: DataConverter;
  /** Extra Worker options (tests: a prebuilt bundle, shorter shutdown grace time…). */
  overrides?: Partial<WorkerOptions>;
}

/**
 * The worker of task queue `payments`: every payment workflow and its activities. Built from its
 * dependencies so tests and the all-in-one dev stack create it the same way as production.
 */
export async function createPaymentWorker(options: PaymentWorkerOptions): Promise<Worker> {
  // The worker's SMTP connections, reused across confirmations; it opens none until a mail.
  const { smtpUrl, maxConnections } = options.activities.mail;
  const mailPool = createMailPool(smtpUrl, { maxConnections });
  let worker: Worker;
  try {
    worker = await Worker.create({
      connection: options.connection,
      namespace: options.namespace,
      taskQueue: options.taskQueue ?? PAYMENTS_TASK_QUEUE,
      ...workflowCodeOptions(options.workflowBundlePath, options.workflowCode),
      workerDeploymentOptions: options.deployment && workerDeploymentOptions(options.deployment),
      dataConverter: options.dataConverter,
      activities: createActivities({
        ...options.activities,
        mail: { ...options.activities.mail, pool: mailPool },
        client: new Client({
          connection: options.connection,
          namespace: options.namespace,
          dataConverter: options.dataConverter,
        }),
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
  // Once the worker has stopped (its activities finished), its idle connections would only keep
  // the process alive. run() is what runUntil() and every entry point await.
  const run = worker.run.bind(worker);
  worker.run = () => run().finally(() => mailPool.close());
  return worker;
}

/**
 * A prebuilt bundle already holds the interceptors (src/workers/workflow-bundle.ts); without
 * one, the worker bundles the workflows from source at start-up, which takes seconds. The
 * activity interceptors are the crash points' (none in production: src/activities/crash-points.ts).
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

/** Where the process entries are (src/worker.ts, src/heavy-worker.ts), compiled: dist/. */
const ENTRY_DIR = path.resolve(__dirname, '..');

/**
 * The bundle to load: WORKFLOW_BUNDLE_PATH when set (it must exist), else `workflow-bundle.js`
 * next to the worker entries when there is one. Compiled, that is dist/workflow-bundle.js from
 * `npm run build`; run from src/ (npm start, tests), there is none, so a stale bundle in dist/
 * never stands in for the source being edited.
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

/** Wires the activities' dependencies from configuration and the URLs the process resolved. */
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
      alertWebhookUrl: config.ALERT_WEBHOOK_URL,
      temporalUiUrl: urls.temporalUiUrl,
      deliveries: createAlertDeliveriesRepository(db.db),
      digestTiming: {
        windowMs: config.ALERT_DIGEST_WINDOW_SECONDS * 1000,
        quietMs: config.ALERT_DIGEST_QUIET_SECONDS * 1000,
      },
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
