import type { Worker } from '@temporalio/worker';
import { createTool, parseTool } from '../cli/command-line';
import { loadConfig } from '../config';
import { createDatabase } from '../db';
import { createLogger } from '../logger';
import { startWorkerHealthServer } from '../monitoring/worker-health';
import { abortOnShutdownSignal, whenAborted } from '../process/shutdown';
import { installTemporalRuntime, metricsAddressFrom } from '../temporal/runtime';
import { temporalSetupReadiness } from '../temporal/setup';
import { connectWorker } from '../temporal/connection';
import { startWorkerRuntime, type WorkerQueue } from './runtime';

const ABOUT: Record<WorkerQueue, string> = {
  payments:
    'The payments worker: the workflows and the activities of task queue payments, with the ' +
    'metrics and health endpoints (WORKER_METRICS_ADDRESS, WORKER_HEALTH_ADDRESS).',
  heavy: 'The heavy worker: invoices and exports, task queue heavy.',
};

/**
 * The metrics and health endpoints belong to the payments worker: a heavy worker beside it on
 * one host would otherwise take the same ports.
 */
export async function runWorkerProcess(name: string, queue: WorkerQueue): Promise<number | void> {
  // Configured by the environment alone; a command line is --help or a mistake, not a start.
  const commandLine = createTool(`npm run ${name} --`, ABOUT[queue]).addHelpText(
    'after',
    '\nConfigured by the environment: docs/configuration.md; deploy units in deploy/.',
  );
  const line = await parseTool(commandLine, () => undefined);
  if (line.kind === 'exit') return line.code;
  const config = loadConfig();
  const logger = createLogger(config, name);
  const needed = {
    TEMPORAL_ADDRESS: config.TEMPORAL_ADDRESS,
    ...(queue === 'payments'
      ? { WAREHOUSE_API_URL: config.WAREHOUSE_API_URL, SMTP_URL: config.SMTP_URL }
      : {}),
  };
  const missing = Object.entries(needed).flatMap(([key, value]) => (value ? [] : [key]));
  if (missing.length > 0) {
    throw new Error(
      `the standalone ${name} needs ${missing.join(', ')}; \`npm start\` runs the embedded dev stack`,
    );
  }
  const servesEndpoints = queue === 'payments';
  const metricsAddress = servesEndpoints
    ? metricsAddressFrom(config.WORKER_METRICS_ADDRESS)
    : undefined;
  installTemporalRuntime(logger, { metricsAddress });
  const stopping = abortOnShutdownSignal();
  // Up before Temporal is reached: while the worker waits for it, probes see a live process
  // (not ready), and an orchestrator does not restart it in a loop.
  const workers: Worker[] = [];
  const readiness: Array<ReturnType<typeof temporalSetupReadiness>> = [];
  const health =
    servesEndpoints && config.WORKER_HEALTH_ADDRESS
      ? await startWorkerHealthServer({ address: config.WORKER_HEALTH_ADDRESS, workers, readiness })
      : undefined;
  const connection = await connectWorker(
    config.TEMPORAL_ADDRESS!,
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
    const runtime = await startWorkerRuntime({
      config,
      logger,
      connection,
      db,
      queues: [queue],
      currentBuild: config.WORKER_SET_CURRENT,
    });
    workers.push(...runtime.workers);
    logger.info(
      { metrics: metricsAddress ? `http://${metricsAddress}/metrics` : 'off' },
      `${name}: polling until SIGTERM`,
    );
    whenAborted(stopping, () => {
      logger.info(
        { signal: stopping.reason },
        `shutting down ${name}: finishing in-flight activities`,
      );
      void runtime.stop();
    });
    await runtime.done;
    logger.info(`${name} stopped`);
  } finally {
    await health?.close();
    await connection.close();
    await db.close();
  }
}
