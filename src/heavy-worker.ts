import { loadConfig } from './config';
import { createDatabase } from './db';
import { createLogger } from './logger';
import { runMain } from './process/run-main';
import { abortOnShutdownSignal, whenAborted } from './process/shutdown';
import { HEAVY_TASK_QUEUE } from './shared/constants';
import { dataConverterFor } from './temporal/data-converter';
import { installTemporalRuntime } from './temporal/runtime';
import { versionString } from './temporal/deployments';
import { connectWorker } from './temporal/worker-connection';
import { claimCurrentIfNone } from './workers/deployment';
import {
  createHeavyWorker,
  heavyActivityDepsFromConfig,
  heavyWorkerSettingsFromConfig,
} from './workers/heavy';
import { loadVersionedWorkflowCode } from './workers/workflow-bundle';

/**
 * The heavy worker (task queue `heavy`), production entry: `node dist/heavy-worker.js` (or
 * `npm run heavy-worker`). Runs until SIGTERM / SIGINT; the worker itself is built in
 * src/workers/heavy.ts.
 */
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
    // The payments worker's bundle, so the same build: a pinned order's invoice runs here.
    const workflowCode = await loadVersionedWorkflowCode(config);
    const worker = await createHeavyWorker({
      dataConverter: dataConverterFor(config.PAYLOAD_ENCRYPTION_KEY),
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      activities: heavyActivityDepsFromConfig(config, db, {
        temporalUiUrl: config.TEMPORAL_UI_URL,
      }),
      ...heavyWorkerSettingsFromConfig(config),
      workflowCode: workflowCode.code,
      deployment: workflowCode.deployment,
    });
    logger.info(
      {
        taskQueue: HEAVY_TASK_QUEUE,
        namespace: config.TEMPORAL_NAMESPACE,
        version: versionString(workflowCode.deployment),
        versioning: config.WORKER_VERSIONING,
        maxConcurrentActivities: config.HEAVY_WORKER_MAX_CONCURRENT_ACTIVITIES,
        invoiceDir: config.INVOICE_DIR,
        exportDir: config.EXPORT_DIR,
      },
      'heavy worker started',
    );
    const running = worker.run();
    claimCurrentIfNone(config, connection, workflowCode.deployment, logger);
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

runMain(main);
