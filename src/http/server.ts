import { createTool, parseTool } from '../cli/command-line';
import { createPaymentStarter } from '../temporal/payment-starter';
import { loadConfig } from '../config';
import { codecEndpointFor, codecEndpointRefusal, dataConverterFor } from '../codec/data-converter';
import {
  createDatabase,
  createOrdersRepository,
  createPartnerPausesRepository,
  createPaymentsRepository,
  createUnmatchedRepository,
} from '../db';
import { createLogger } from '../logger';
import { startWatchdogFromConfig, WATCHED_TASK_QUEUES } from '../monitoring';
import { onShutdownSignal } from '../process/shutdown';
import { runMain } from '../process/run-main';
import { createLazyClient } from '../temporal/connection';
import { createThinEventStarter } from '../temporal/thin-event-starter';
import { temporalSetupReadiness } from '../temporal/setup';
import { buildAdminApp, listenAdmin } from './admin';
import { buildApp } from './app';
import { databaseReadiness, temporalReadiness, workersReadiness } from './health';
import { createHttpMetrics } from './metrics';
import { ordersApiAccess } from './orders-auth';

const commandLine = createTool(
  'npm run http --',
  'The HTTP process: the webhook endpoints and the orders API, with /healthz, and /readyz and ' +
    '/metrics on ADMIN_ADDRESS.',
).addHelpText(
  'after',
  '\nConfigured by the environment: docs/configuration.md; deploy units in deploy/.',
);

/** `npm start` runs the embedded dev stack instead. */
async function main(): Promise<number | void> {
  // Configured by the environment alone: a command line is --help or a mistake, not a start.
  const line = await parseTool(commandLine, () => undefined);
  if (line.kind === 'exit') return line.code;
  const config = loadConfig();
  const logger = createLogger(config, 'http');
  if (!config.TEMPORAL_ADDRESS) {
    throw new Error(
      'the standalone HTTP server needs TEMPORAL_ADDRESS; `npm start` runs the embedded dev stack',
    );
  }
  // Production without orders API keys stops here, before any connection is opened.
  const ordersApi = ordersApiAccess(config);
  const db = createDatabase(config.DATABASE_URL, { poolMax: config.DATABASE_POOL_MAX });
  const client = createLazyClient({
    dataConverter: dataConverterFor(config.PAYLOAD_ENCRYPTION_KEY),
    address: config.TEMPORAL_ADDRESS,
    namespace: config.TEMPORAL_NAMESPACE,
    settings: config.temporalConnection,
  });
  const codecRefused = codecEndpointRefusal(config);
  if (codecRefused) logger.warn({ reason: codecRefused }, 'codec endpoint /codec not served');
  const metrics = createHttpMetrics({
    defaultMetrics: true,
    partnerPauses: createPartnerPausesRepository(db.db),
  });
  const app = await buildApp({
    config,
    logger,
    payments: createPaymentStarter(client, {
      startTimeoutMs: config.TEMPORAL_START_TIMEOUT_MS,
    }),
    unmatchedRepository: createUnmatchedRepository(db.db),
    // Without a key there is nothing to fetch a thin event with: the route keeps it as unmatched.
    thinEvents: config.STRIPE_API_KEY
      ? createThinEventStarter(client, { startTimeoutMs: config.TEMPORAL_START_TIMEOUT_MS })
      : undefined,
    ordersRepository: createOrdersRepository(db.db),
    paymentsRepository: createPaymentsRepository(db.db),
    metrics,
    codec: codecEndpointFor(config),
    ordersApi,
  });
  const admin =
    config.ADMIN_ADDRESS === 'off'
      ? undefined
      : await buildAdminApp({
          logger,
          readiness: [
            databaseReadiness(db.db),
            temporalReadiness(client.connection),
            temporalSetupReadiness(client.connection, config.TEMPORAL_NAMESPACE),
            workersReadiness(
              client,
              {
                deploymentName: config.WORKER_DEPLOYMENT_NAME,
                versioned: config.WORKER_VERSIONING === 'on',
              },
              WATCHED_TASK_QUEUES,
            ),
          ],
          metrics,
        });
  // Here, not in a worker: a dead worker cannot report that it is dead.
  const watchdog = startWatchdogFromConfig(config, client, logger, config.TEMPORAL_UI_URL, db.db);
  onShutdownSignal(async (signal) => {
    logger.info({ signal }, 'shutting down HTTP server: draining requests');
    await watchdog?.stop();
    // Together: while the public port drains, /readyz already answers 503 (closing).
    await Promise.all([app.close(), admin?.close()]);
    await client.connection.close();
    await db.close();
  });
  await app.listen({ port: config.PORT, host: config.HOST });
  if (admin) {
    const adminUrl = await listenAdmin(admin, config.ADMIN_ADDRESS);
    logger.info({ adminUrl }, 'admin listener: /metrics, /readyz, /healthz');
  }
}

runMain(main);
