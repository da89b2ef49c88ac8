import { loadConfig } from '../config';
import {
  codecEndpointFor,
  codecEndpointRefusal,
  dataConverterFor,
} from '../temporal/data-converter';
import { createDatabase, createOrdersRepository, createPaymentsRepository } from '../db';
import { createLogger } from '../logger';
import { startWatchdogFromConfig } from '../monitoring';
import { onShutdownSignal } from '../process/shutdown';
import { createLazyClient } from '../temporal/client';
import { createPaymentStarter } from '../temporal/payment-starter';
import { buildApp } from './app';
import { databaseReadiness, temporalReadiness } from './health';
import { createHttpMetrics } from './metrics';

/**
 * Production entry of the HTTP process: `node dist/http/server.js` (or `npm run http`). It needs
 * a Temporal address; `npm start` runs the embedded dev stack instead.
 */
async function main(): Promise<void> {
  const config = loadConfig();
  const logger = createLogger(config, 'http');
  if (!config.TEMPORAL_ADDRESS) {
    throw new Error(
      'the standalone HTTP server needs TEMPORAL_ADDRESS; `npm start` runs the embedded dev stack',
    );
  }
  const db = createDatabase(config.DATABASE_URL, { poolMax: config.DATABASE_POOL_MAX });
  const client = createLazyClient({
    dataConverter: dataConverterFor(config.PAYLOAD_ENCRYPTION_KEY),
    address: config.TEMPORAL_ADDRESS,
    namespace: config.TEMPORAL_NAMESPACE,
    settings: config.temporalConnection,
  });
  const codecRefused = codecEndpointRefusal(config);
  if (codecRefused) logger.warn({ reason: codecRefused }, 'codec endpoint /codec not served');
  const app = await buildApp({
    config,
    logger,
    payments: createPaymentStarter(client, { startTimeoutMs: config.TEMPORAL_START_TIMEOUT_MS }),
    ordersRepository: createOrdersRepository(db.db),
    paymentsRepository: createPaymentsRepository(db.db),
    readiness: [databaseReadiness(db.db), temporalReadiness(client.connection)],
    metrics: createHttpMetrics({ defaultMetrics: true }),
    codec: codecEndpointFor(config),
  });
  // Here, not in a worker: a dead worker cannot report that it is dead.
  const watchdog = startWatchdogFromConfig(config, client, logger, config.TEMPORAL_UI_URL);
  onShutdownSignal(async (signal) => {
    logger.info({ signal }, 'shutting down HTTP server: draining requests');
    await watchdog?.stop();
    await app.close();
    await client.connection.close();
    await db.close();
  });
  await app.listen({ port: config.PORT, host: config.HOST });
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
