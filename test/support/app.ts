import { type Agent, request as httpRequest } from 'node:http';
import type { Client } from '@temporalio/client';
import type { FastifyInstance } from 'fastify';
import { type AppDeps, buildApp } from '../../src/http/app';
import { createLogger } from '../../src/logger';
import {
  createOrdersRepository,
  createPaymentsRepository,
  createUnmatchedRepository,
  type DatabaseHandle,
} from '../../src/db';
import { createPaymentStarter, type PaymentStarter } from '../../src/temporal/payment-starter';
import { TEST_WEBHOOK_SECRET } from './webhook';

/** The app's logger with nothing written: for tests that do not read the app's log. */
export function silentLogger() {
  return createLogger({ LOG_LEVEL: 'silent' });
}

/** For apps whose tests start no payment: a call fails the test loudly. */
export const noPayments: PaymentStarter = {
  start: () => Promise.reject(new Error('this test starts no payments')),
  startRefund: () => Promise.reject(new Error('this test starts no refunds')),
  startDispute: () => Promise.reject(new Error('this test starts no disputes')),
};

export interface TestAppOptions extends Partial<
  Omit<AppDeps, 'config' | 'payments' | 'unmatchedRepository'>
> {
  /** The database behind both repositories, unless they are given. */
  db?: DatabaseHandle;
  /** Settings beyond the test's webhook secret and the default body limit. */
  config?: Partial<AppDeps['config']>;
  /** Default: starts through `client` when given, else `noPayments`. */
  payments?: PaymentStarter;
  /** Default: the database's inbox when `db` is given, else one that fails the test if used. */
  unmatchedRepository?: AppDeps['unmatchedRepository'];
  /** A Temporal client the webhook starts payment workflows with. */
  client?: Client;
  /** How long the webhook waits for Temporal (default 5000 ms). */
  startTimeoutMs?: number;
}

/**
 * The HTTP app as `npm start` builds it, over the test's database and Temporal client, not
 * listening (inject requests; `app.listen({ port: 0 })` for a real socket). Defaults: the test
 * webhook secret, a 64 KiB body limit, a silent logger, and without `db` or repositories, orders
 * routes that fail if called (webhook-only tests).
 */
export function buildTestApp(options: TestAppOptions = {}): Promise<FastifyInstance> {
  const { db, config, client, startTimeoutMs = 5000, ...deps } = options;
  const repository = (name: 'ordersRepository' | 'paymentsRepository') => {
    if (deps[name]) return deps[name];
    if (db) {
      return name === 'ordersRepository'
        ? createOrdersRepository(db.db)
        : createPaymentsRepository(db.db);
    }
    // Webhook-only tests need no database: a repository that fails if ever called.
    return new Proxy(
      {},
      {
        get() {
          throw new Error(`this test's app has no database: ${name} was called`);
        },
      },
    );
  };
  return buildApp({
    ...deps,
    config: {
      PAYMENT_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET,
      WEBHOOK_BODY_LIMIT_BYTES: 65536,
      ...config,
    },
    logger: deps.logger ?? silentLogger(),
    payments:
      deps.payments ?? (client ? createPaymentStarter(client, { startTimeoutMs }) : noPayments),
    unmatchedRepository:
      deps.unmatchedRepository ??
      (db
        ? createUnmatchedRepository(db.db)
        : {
            record: () => Promise.reject(new Error('this test keeps nothing as unmatched')),
            countRedelivery: () => Promise.resolve(undefined),
          }),
    ordersRepository: repository('ordersRepository') as AppDeps['ordersRepository'],
    paymentsRepository: repository('paymentsRepository') as AppDeps['paymentsRepository'],
  });
}

/**
 * POSTs `body` over real HTTP to an app listening on 127.0.0.1:`port`, with exactly these raw
 * header lines after Host and Content-Length (names spelt as given, repeats kept, as on the wire).
 */
export function postWithHeaderLines(
  port: number,
  path: string,
  body: string | Buffer,
  lines: string[],
  agent?: Agent,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: 'POST',
        path,
        agent,
        headers: [
          'Host',
          `127.0.0.1:${port}`,
          'Content-Length',
          String(Buffer.byteLength(body)),
          ...lines,
        ],
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }),
        );
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}
