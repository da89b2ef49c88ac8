import type { DataConverter } from '@temporalio/common';
import { dataConverterFor } from './temporal/data-converter';
import { type NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createHeavyActivities, type HeavyActivityDeps } from './activities/heavy';
import { loadConfig, type Config } from './config';
import {
  createDatabase,
  createOrderExportRepository,
  createOrdersRepository,
  createPaymentsRepository,
  createStockRepository,
  type DatabaseHandle,
} from './db';
import { createLogger } from './logger';
import { abortOnShutdownSignal, whenAborted } from './process/shutdown';
import { connectWorker } from './temporal/worker-connection';
import { HEAVY_TASK_QUEUE } from './shared/constants';
import { installTemporalRuntime } from './temporal/runtime';
import { resolveWorkflowBundlePath, workflowCodeOptions } from './worker';

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
  activities: HeavyActivityDeps;
  /** Activities run at once (default 2). Workflow tasks are cheap and keep the SDK's default. */
  maxConcurrentActivities?: number;
  /** The prebuilt bundle the payment worker loads too (`npm run build`); unset: bundled from source. */
  workflowBundlePath?: string;
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
    ...workflowCodeOptions(options.workflowBundlePath),
    dataConverter: options.dataConverter,
    activities: createHeavyActivities(options.activities),
    maxConcurrentActivityTaskExecutions:
      options.maxConcurrentActivities ?? DEFAULT_HEAVY_MAX_CONCURRENT_ACTIVITIES,
    shutdownGraceTime: SHUTDOWN_GRACE_TIME,
    ...options.overrides,
  });
}

/** The heavy worker's settings that come from configuration (slots, workflow bundle). */
export function heavyWorkerSettingsFromConfig(
  config: Config,
): Pick<HeavyWorkerOptions, 'maxConcurrentActivities' | 'workflowBundlePath'> {
  return {
    maxConcurrentActivities: config.HEAVY_WORKER_MAX_CONCURRENT_ACTIVITIES,
    workflowBundlePath: resolveWorkflowBundlePath(config.WORKFLOW_BUNDLE_PATH),
  };
}

/** Wires the heavy activities' dependencies from configuration. */
export function heavyActivityDepsFromConfig(
  config: Config,
  db: DatabaseHandle,
  urls: { temporalUiUrl: string | undefined },
): HeavyActivityDeps {
  return {
    orders: createOrdersRepository(db.db),
    payments: createPaymentsRepository(db.db),
    orderExport: createOrderExportRepository(db.db),
    invoiceDir: config.INVOICE_DIR,
    exportDir: config.EXPORT_DIR,
    invoiceDelayMs: config.INVOICE_DELAY_MS,
    stock: createStockRepository(db.db),
    stockAggregationDelayMs: config.STOCK_AGGREGATION_DELAY_MS,
    alerts: { alertWebhookUrl: config.ALERT_WEBHOOK_URL, temporalUiUrl: urls.temporalUiUrl },
  };
}

/** Production entry: `node dist/heavy-worker.js` (or `npm run heavy-worker`). Runs until SIGTERM / SIGINT. */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config, 'heavy-worker');
  if (!config.TEMPORAL_ADDRESS) {
    throw new Error(
      'the standalone heavy worker needs TEMPORAL_ADDRESS; `npm start` runs the embedded dev stack',
    );
  }
  installTemporalRuntime(logger);
  const stopping = abortOnShutdownSignal();
  const connection = await connectWorker(
    config.TEMPORAL_ADDRESS,
    config.temporalConnection,
    logger,
    stopping,
  );
  if (!connection) {
    logger.info({ signal: stopping.reason }, 'stopped before Temporal was reachable');
    return;
  }
  const db = createDatabase(config.DATABASE_URL);
  try {
    const worker = await createHeavyWorker({
      dataConverter: dataConverterFor(config.PAYLOAD_ENCRYPTION_KEY),
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      activities: heavyActivityDepsFromConfig(config, db, {
        temporalUiUrl: config.TEMPORAL_UI_URL,
      }),
      ...heavyWorkerSettingsFromConfig(config),
    });
    logger.info(
      {
        taskQueue: HEAVY_TASK_QUEUE,
        namespace: config.TEMPORAL_NAMESPACE,
        maxConcurrentActivities: config.HEAVY_WORKER_MAX_CONCURRENT_ACTIVITIES,
        invoiceDir: config.INVOICE_DIR,
        exportDir: config.EXPORT_DIR,
      },
      'heavy worker started',
    );
    const running = worker.run();
    whenAborted(stopping, () => {
      logger.info(
        { signal: stopping.reason },
        'shutting down heavy worker: finishing in-flight activities',
      );
      worker.shutdown();
    });
    await running;
    logger.info('heavy worker stopped');
  } finally {
    await connection.close();
    await db.close();
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
