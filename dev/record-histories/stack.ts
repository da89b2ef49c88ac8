import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Worker } from '@temporalio/worker';
import { createStockActivities } from '../../src/activities/stock-activities';
import { createStockRepository } from '../../src/db';
import { HEAVY_TASK_QUEUE } from '../../src/shared/constants';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../../src/shared/search-attributes';
import { createPaymentStarter } from '../../src/temporal/payment-starter';
import { createPaymentWorker } from '../../src/workers/payments';
import { testActivityDeps } from '../../harness/activity-deps';
import { testDatabases } from '../../harness/databases';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { startSmtpSink } from '../../harness/partners/smtp-sink';
import { createWarehouseSimulator } from '../../harness/partners/warehouse-simulator';
import type { Stack } from './steps';

/**
 * Runs `record` against the real payment worker (a dev server, a SQLite temp database, the
 * warehouse simulator, the SMTP sink, an alert sink), and takes all of it down afterwards.
 */
export async function withRecordingStack<T>(record: (stack: Stack) => Promise<T>): Promise<T> {
  const closers: Array<() => Promise<void>> = [];
  try {
    const env = await createDevServerEnv({
      searchAttributes: [...CUSTOM_SEARCH_ATTRIBUTES],
      fastDeletion: true,
    });
    closers.push(() => env.teardown());
    const db = await testDatabases[0]!.create();
    closers.push(() => db.close());
    const warehouse = createWarehouseSimulator();
    const warehouseUrl = await warehouse.listen(0);
    closers.push(() => warehouse.close());
    const smtp = await startSmtpSink();
    closers.push(() => smtp.close());
    const alertSink = await startAlertSink();
    closers.push(() => alertSink.close());

    const worker = await createPaymentWorker({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      activities: {
        ...testActivityDeps(db, { warehouseUrl, smtpUrl: smtp.url }),
        alerts: { alertWebhookUrl: alertSink.url, temporalUiUrl: undefined },
      },
    });
    // The stock aggregation's activity runs on `heavy` (src/workflows/stock.ts): a worker there
    // with only that activity, as no other scenario schedules work on that queue.
    const stockWorker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue: HEAVY_TASK_QUEUE,
      activities: createStockActivities({ stock: createStockRepository(db.db) }),
    });
    const stack: Stack = {
      env,
      client: env.client,
      db,
      starter: createPaymentStarter(env.client, { startTimeoutMs: 10_000 }),
      warehouse,
    };
    return await stockWorker.runUntil(worker.runUntil(() => record(stack)));
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  }
}

/**
 * A Slack-like alert webhook that answers each alert's first delivery with 429 (Retry-After 1 s)
 * and accepts the second, so alert histories hold the rate-limit wait too.
 */
async function startAlertSink(): Promise<{ url: string; close(): Promise<void> }> {
  const seen = new Set<string>();
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const key = String(request.headers['idempotency-key'] ?? '');
      if (!seen.has(key)) {
        seen.add(key);
        response.writeHead(429, { 'retry-after': '1' }).end();
      } else {
        response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/alerts`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
