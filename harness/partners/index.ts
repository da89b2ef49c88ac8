import type { Config } from '../../src/config';
import type { Logger } from '../../src/logger';
import { maskEmail } from '../../src/shared/pii';
import { startSmtpSink } from './smtp-sink';
import { createWarehouseSimulator } from './warehouse-simulator';

/** Something to close when the dev stack stops, in reverse order of start. */
export interface Cleanup {
  name: string;
  run: () => Promise<void>;
}

/**
 * The partners `npm start` talks to: the configured ones (WAREHOUSE_API_URL, SMTP_URL), or local
 * stand-ins on their dev ports, the warehouse simulator (its state kept in a file across
 * restarts) and an SMTP sink that logs each mail. Each stand-in started is pushed on `cleanups`.
 */
export async function startLocalPartners(
  config: Pick<
    Config,
    | 'WAREHOUSE_API_URL'
    | 'WAREHOUSE_SIMULATOR_STATE'
    | 'WAREHOUSE_SIMULATOR_PORT'
    | 'SMTP_URL'
    | 'SMTP_SINK_PORT'
  >,
  logger: Logger,
  cleanups: Cleanup[],
): Promise<{ warehouseUrl: string; smtpUrl: string }> {
  let warehouseUrl = config.WAREHOUSE_API_URL;
  if (!warehouseUrl) {
    const simulator = createWarehouseSimulator({ stateFile: config.WAREHOUSE_SIMULATOR_STATE });
    cleanups.push({ name: 'warehouse simulator', run: () => simulator.close() });
    warehouseUrl = await simulator.listen(config.WAREHOUSE_SIMULATOR_PORT);
  }
  let smtpUrl = config.SMTP_URL;
  if (!smtpUrl) {
    const sink = await startSmtpSink({ port: config.SMTP_SINK_PORT });
    cleanups.push({ name: 'smtp sink', run: () => sink.close() });
    sink.onMessage = (mail) =>
      logger.info(
        {
          component: 'smtp-sink',
          // A hint to find the mail by, not the address: logs outlive the order.
          to: mail.envelopeTo.map(maskEmail),
          subject: mail.subject,
          messageId: mail.messageId,
        },
        'mail received',
      );
    smtpUrl = sink.url;
  }
  return { warehouseUrl, smtpUrl };
}
