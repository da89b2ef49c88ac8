import { Client } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from './activities';
import { createWarehouseClient } from './activities/warehouse-client';
import { loadConfig, type Config } from './config';
import {
  createDatabase,
  createLoyaltyRepository,
  createOrdersRepository,
  createPaymentsRepository,
  createStockRepository,
  type DatabaseHandle,
} from './db';
import { createLogger } from './logger';
import { PAYMENTS_TASK_QUEUE } from './shared/constants';
import { installTemporalRuntime } from './temporal/runtime';
import { onShutdownSignal } from './process/shutdown';

export type WorkerActivityDeps = Omit<ActivityDeps, 'client'>;

export interface PaymentWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  /** Everything but the Temporal client, which is made on the worker's own connection. */
  activities: WorkerActivityDeps;
  taskQueue?: string;
  /** Extra Worker options (tests: a prebuilt bundle, shorter shutdown grace time…). */
  overrides?: Partial<WorkerOptions>;
}

/**
 * The worker of task queue `payments`: every payment workflow and its activities. Built from its
 * dependencies so tests and the all-in-one dev stack create it the same way as production.
 */
export async function createPaymentWorker(options: PaymentWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue ?? PAYMENTS_TASK_QUEUE,
    workflowsPath: require.resolve('./workflows'),
    // One alert for every workflow that ends Failed, whatever its type (src/workflows/interceptors.ts).
    interceptors: { workflowModules: [require.resolve('./workflows/interceptors')] },
    activities: createActivities({
      ...options.activities,
      client: new Client({ connection: options.connection, namespace: options.namespace }),
    }),
    ...options.overrides,
  });
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
    stock: createStockRepository(db.db),
    stockAggregationDelayMs: config.STOCK_AGGREGATION_DELAY_MS,
    mail: { smtpUrl: urls.smtpUrl, from: config.MAIL_FROM },
    warehouse: createWarehouseClient({
      baseUrl: urls.warehouseUrl,
      timeoutMs: config.WAREHOUSE_TIMEOUT_MS,
    }),
    alerts: { alertWebhookUrl: config.ALERT_WEBHOOK_URL, temporalUiUrl: urls.temporalUiUrl },
  };
}

/** Production entry: `node dist/worker.js` (or `npm run worker`). Runs until SIGTERM / SIGINT. */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config, 'worker');
  if (!config.TEMPORAL_ADDRESS || !config.WAREHOUSE_API_URL || !config.SMTP_URL) {
    throw new Error(
      'the standalone worker needs TEMPORAL_ADDRESS, WAREHOUSE_API_URL and SMTP_URL; `npm start` runs the embedded dev stack',
    );
  }
  installTemporalRuntime(logger);
  const db = createDatabase(config.DATABASE_URL);
  const connection = await NativeConnection.connect({ address: config.TEMPORAL_ADDRESS });
  try {
    const worker = await createPaymentWorker({
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      activities: activityDepsFromConfig(config, db, {
        warehouseUrl: config.WAREHOUSE_API_URL,
        temporalUiUrl: config.TEMPORAL_UI_URL,
        smtpUrl: config.SMTP_URL,
      }),
    });
    onShutdownSignal((signal) => {
      logger.info({ signal }, 'shutting down worker: finishing in-flight activities');
      worker.shutdown();
    });
    logger.info(
      { taskQueue: PAYMENTS_TASK_QUEUE, namespace: config.TEMPORAL_NAMESPACE },
      'worker started',
    );
    await worker.run();
    logger.info('worker stopped');
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
