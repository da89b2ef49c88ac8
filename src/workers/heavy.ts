import { Client } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createHeavyActivities, type HeavyActivityDeps } from '../activities/heavy';
import type { Config } from '../config';
import {
  createAlertDeliveriesRepository,
  createOrderExportRepository,
  createOrdersRepository,
  createPaymentsRepository,
  createStockRepository,
  type DatabaseHandle,
} from '../db';
import { HEAVY_TASK_QUEUE } from '../shared/constants';
import { workerDeploymentOptions, type WorkerDeployment } from './deployment';
import { workflowCodeOptions } from './payments';

/** Activities one heavy worker runs at once unless told otherwise (HEAVY_WORKER_MAX_CONCURRENT_ACTIVITIES). */
export const DEFAULT_HEAVY_MAX_CONCURRENT_ACTIVITIES = 2;

/**
 * On SIGTERM, in-flight heavy activities get this long to finish before they are cancelled. An
 * export chunk takes milliseconds; a long invoice is cancelled at its next heartbeat and retried
 * by another worker, writing the same file; so is a stock aggregation (up to 7 minutes,
 * heartbeating every second), whose retry returns or writes the one snapshot of its scheduled
 * time. All are idempotent, so cutting them short loses nothing but the work done so far, and
 * the heavy worker stops within seconds rather than after its longest job.
 */
const SHUTDOWN_GRACE_TIME = '10 seconds';

export interface HeavyWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  /** Everything but the Temporal client, which is made on the worker's own connection. */
  activities: Omit<HeavyActivityDeps, 'client'>;
  /** Activities run at once (default 2). Workflow tasks are cheap and keep the SDK's default. */
  maxConcurrentActivities?: number;
  /** The prebuilt bundle the payment worker loads too (`npm run build`); unset: bundled from source. */
  workflowBundlePath?: string;
  /** The bundle's code, already loaded; wins over workflowBundlePath. */
  workflowCode?: string;
  /**
   * The build this worker declares: the payments worker's, since it runs the same bundle, so a
   * pinned order's invoice child runs on the order's build. Unset: unversioned (tests).
   */
  deployment?: WorkerDeployment;
  taskQueue?: string;
  /** Payload encryption, the same as the payment worker's (src/temporal/data-converter.ts). */
  dataConverter?: DataConverter;
  /** Extra Worker options (tests: a prebuilt bundle…). */
  overrides?: Partial<WorkerOptions>;
}

/**
 * The worker of task queue `heavy`: PDF invoices, order exports and the stock aggregation, in a
 * pool of their own so a backlog there never delays payments and mail on `payments`, and a long
 * job never stretches the payments worker's shutdown. It loads the same workflow
 * bundle as the payment worker and registers only the heavy activities.
 */
export async function createHeavyWorker(options: HeavyWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue ?? HEAVY_TASK_QUEUE,
    // The payment worker's workflow code, failure-alert interceptor included: one bundle for both.
    ...workflowCodeOptions(options.workflowBundlePath, options.workflowCode),
    workerDeploymentOptions: options.deployment && workerDeploymentOptions(options.deployment),
    dataConverter: options.dataConverter,
    activities: createHeavyActivities({
      ...options.activities,
      client: new Client({
        connection: options.connection,
        namespace: options.namespace,
        dataConverter: options.dataConverter,
      }),
    }),
    maxConcurrentActivityTaskExecutions:
      options.maxConcurrentActivities ?? DEFAULT_HEAVY_MAX_CONCURRENT_ACTIVITIES,
    shutdownGraceTime: SHUTDOWN_GRACE_TIME,
    ...options.overrides,
  });
}

/** Wires the heavy activities' dependencies from configuration. */
export function heavyActivityDepsFromConfig(
  config: Config,
  db: DatabaseHandle,
  urls: { temporalUiUrl: string | undefined },
): Omit<HeavyActivityDeps, 'client'> {
  return {
    orders: createOrdersRepository(db.db),
    payments: createPaymentsRepository(db.db),
    orderExport: createOrderExportRepository(db.db),
    invoiceDir: config.INVOICE_DIR,
    exportDir: config.EXPORT_DIR,
    invoiceDelayMs: config.INVOICE_DELAY_MS,
    stock: createStockRepository(db.db),
    stockAggregationDelayMs: config.STOCK_AGGREGATION_DELAY_MS,
    alerts: {
      alertWebhookUrl: config.ALERT_WEBHOOK_URL,
      temporalUiUrl: urls.temporalUiUrl,
      deliveries: createAlertDeliveriesRepository(db.db),
      digestTiming: {
        windowMs: config.ALERT_DIGEST_WINDOW_SECONDS * 1000,
        quietMs: config.ALERT_DIGEST_QUIET_SECONDS * 1000,
      },
    },
  };
}
