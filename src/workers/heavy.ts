import { Worker } from '@temporalio/worker';
import { createHeavyActivities, type HeavyActivityDeps } from '../activities/heavy';
import type { Config } from '../config';
import {
  createOrderExportRepository,
  createOrdersRepository,
  createPaymentsRepository,
  createStockRepository,
  type DatabaseHandle,
} from '../db';
import { HEAVY_TASK_QUEUE } from '../shared/constants';
import {
  alertDepsFromConfig,
  sharedWorkerOptions,
  workerClient,
  type SharedWorkerOptions,
} from './payments';

export const DEFAULT_HEAVY_MAX_CONCURRENT_ACTIVITIES = 2;

/**
 * On SIGTERM, in-flight heavy activities get this long before they are cancelled: all are
 * idempotent (a cancelled invoice or aggregation is retried elsewhere, writing the same file or
 * snapshot), so the heavy worker stops within seconds rather than after its longest job.
 */
const SHUTDOWN_GRACE_TIME = '10 seconds';

export interface HeavyWorkerOptions extends SharedWorkerOptions {
  activities: Omit<HeavyActivityDeps, 'client'>;
  /** Activities run at once (default 2). Workflow tasks are cheap and keep the SDK's default. */
  maxConcurrentActivities?: number;
}

/** Its own pool: a backlog never delays `payments`, a long job never stretches its shutdown. */
export async function createHeavyWorker(options: HeavyWorkerOptions): Promise<Worker> {
  return Worker.create({
    // The payment worker's workflow code, failure-alert interceptor included: one bundle for both.
    ...sharedWorkerOptions(options),
    taskQueue: options.taskQueue ?? HEAVY_TASK_QUEUE,
    activities: createHeavyActivities({ ...options.activities, client: workerClient(options) }),
    maxConcurrentActivityTaskExecutions:
      options.maxConcurrentActivities ?? DEFAULT_HEAVY_MAX_CONCURRENT_ACTIVITIES,
    shutdownGraceTime: SHUTDOWN_GRACE_TIME,
    ...options.overrides,
  });
}

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
    alerts: alertDepsFromConfig(config, db, urls),
  };
}
