import { loadConfig } from '../config';
import { createDatabase, createOrdersRepository, createPaymentsRepository } from '../db';
import { createLogger } from '../logger';
import { onShutdownSignal } from '../process/shutdown';
import { createLazyClient } from '../temporal/client';
import { createPaymentStarter } from '../temporal/payment-starter';
import { buildApp } from './app';

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
  const db = createDatabase(config.DATABASE_URL);
  const client = createLazyClient({
    address: config.TEMPORAL_ADDRESS,
    namespace: config.TEMPORAL_NAMESPACE,
  });
  const app = await buildApp({
    config,
    logger,
    payments: createPaymentStarter(client, { startTimeoutMs: config.TEMPORAL_START_TIMEOUT_MS }),
    ordersRepository: createOrdersRepository(db.db),
    paymentsRepository: createPaymentsRepository(db.db),
  });
  onShutdownSignal(async (signal) => {
    logger.info({ signal }, 'shutting down HTTP server: draining requests');
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
