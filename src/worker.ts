import type { Worker } from '@temporalio/worker';
import { loadConfig } from './config';
import { createDatabase } from './db';
import { createLogger } from './logger';
import { startWorkerHealthServer } from './monitoring/worker-health';
import { runMain } from './process/run-main';
import { abortOnShutdownSignal, whenAborted } from './process/shutdown';
import { PAYMENTS_TASK_QUEUE } from './shared/constants';
import { dataConverterFor } from './temporal/data-converter';
import { installTemporalRuntime, metricsAddressFrom } from './temporal/runtime';
import { versionString } from './temporal/deployments';
import { temporalSetupReadiness } from './temporal/setup';
import { connectWorker } from './temporal/worker-connection';
import {
  activityDepsFromConfig,
  createPaymentWorker,
  PAYMENTS_WORKER_SHUTDOWN_GRACE_MS,
  workerSettingsFromConfig,
} from './workers/payments';
import { claimCurrentIfNone } from './workers/deployment';
import { loadVersionedWorkflowCode } from './workers/workflow-bundle';

/**
 * The payment worker (task queue `payments`), production entry: `node dist/worker.js` (or
 * `npm run worker`). Runs until SIGTERM / SIGINT; the worker itself is built in
 * src/workers/payments.ts, as the dev stack and the tests build it.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config, 'worker');
  if (!config.TEMPORAL_ADDRESS || !config.WAREHOUSE_API_URL || !config.SMTP_URL) {
    throw new Error(
      'the standalone worker needs TEMPORAL_ADDRESS, WAREHOUSE_API_URL and SMTP_URL; `npm start` runs the embedded dev stack',
    );
  }
  const metricsAddress = metricsAddressFrom(config.WORKER_METRICS_ADDRESS);
  installTemporalRuntime(logger, { metricsAddress });
  const settings = workerSettingsFromConfig(config);
  const stopping = abortOnShutdownSignal();
  // Up before Temporal is reached: while the worker waits for it, probes see a live process
  // (not ready), and an orchestrator does not restart it in a loop.
  const workers: Worker[] = [];
  const readiness: Array<ReturnType<typeof temporalSetupReadiness>> = [];
  const health = config.WORKER_HEALTH_ADDRESS
    ? await startWorkerHealthServer({ address: config.WORKER_HEALTH_ADDRESS, workers, readiness })
    : undefined;
  const connection = await connectWorker(
    config.TEMPORAL_ADDRESS,
    config.temporalConnection,
    logger,
    stopping,
  );
  if (!connection) {
    logger.info({ signal: stopping.reason }, 'stopped before Temporal was reachable');
    await health?.close();
    return;
  }
  // Not ready while the search attributes its workflows set are missing (npm run temporal:setup).
  readiness.push(temporalSetupReadiness(connection, config.TEMPORAL_NAMESPACE));
  const db = createDatabase(config.DATABASE_URL, { poolMax: config.DATABASE_POOL_MAX });
  try {
    const workflowCode = await loadVersionedWorkflowCode(config);
    const worker = await createPaymentWorker({
      dataConverter: dataConverterFor(config.PAYLOAD_ENCRYPTION_KEY),
      connection,
      namespace: config.TEMPORAL_NAMESPACE,
      activities: activityDepsFromConfig(config, db, {
        warehouseUrl: config.WAREHOUSE_API_URL,
        temporalUiUrl: config.TEMPORAL_UI_URL,
        smtpUrl: config.SMTP_URL,
      }),
      ...settings,
      workflowCode: workflowCode.code,
      deployment: workflowCode.deployment,
    });
    workers.push(worker);
    logger.info(
      {
        taskQueue: PAYMENTS_TASK_QUEUE,
        namespace: config.TEMPORAL_NAMESPACE,
        workflowBundle: workflowCode.origin,
        version: versionString(workflowCode.deployment),
        versioning: config.WORKER_VERSIONING,
        maxConcurrentActivities: settings.maxConcurrentActivities,
        maxConcurrentWorkflowTasks: settings.maxConcurrentWorkflowTasks,
        metrics: metricsAddress ? `http://${metricsAddress}/metrics` : 'off',
        health: config.WORKER_HEALTH_ADDRESS ?? 'off',
      },
      'worker started',
    );
    const running = worker.run();
    claimCurrentIfNone(config, connection, workflowCode.deployment, logger);
    whenAborted(stopping, () => {
      logger.info(
        { signal: stopping.reason, graceSeconds: PAYMENTS_WORKER_SHUTDOWN_GRACE_MS / 1000 },
        'shutting down worker: finishing in-flight activities',
      );
      worker.shutdown();
    });
    await running;
    logger.info('worker stopped');
  } finally {
    await health?.close();
    await connection.close();
    await db.close();
  }
}

runMain(main);
