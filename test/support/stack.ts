import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { Worker, WorkerOptions } from '@temporalio/worker';
import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../../src/config';
import { PAYMENT_WEBHOOK_PATH } from '../../src/http/routes/payment-webhook';
import { signBody } from '../../src/http/signature';
import {
  createOrdersRepository,
  createPaymentsRepository,
  type OrdersRepository,
  type PaymentsRepository,
} from '../../src/db';
import { startSmtpSink, type SmtpSink } from '../../harness/partners/smtp-sink';
import { createPaymentStarter, type PaymentStarter } from '../../src/temporal/payment-starter';
import {
  createWarehouseSimulator,
  type WarehouseSimulator,
} from '../../harness/partners/warehouse-simulator';
import { activityDepsFromConfig, createPaymentWorker } from '../../src/workers/payments';
import { buildTestApp, type TestAppOptions } from './app';
import { testDatabases, type TestDatabase, type TestDatabaseHandle } from '../../harness/databases';
import { TEST_WEBHOOK_SECRET } from './webhook';
import { runUntilStopped } from './workers';

/** The sender of confirmations in tests: Message-IDs end in `@test.local`. */
export const TEST_MAIL_FROM = 'Order Payments <orders@test.local>';

/** A worker's local partners: the warehouse simulator and the SMTP sink, on free ports. */
export interface Partners {
  warehouse: WarehouseSimulator;
  warehouseUrl: string;
  smtp: SmtpSink;
  smtpUrl: string;
  close(): Promise<void>;
}

/** `configure` runs before the simulator listens (e.g. to add a Fastify hook to its app). */
export async function startPartners(
  configure: (warehouse: WarehouseSimulator) => void = () => {},
): Promise<Partners> {
  const warehouse = createWarehouseSimulator();
  configure(warehouse);
  const warehouseUrl = await warehouse.listen(0);
  try {
    const smtp = await startSmtpSink();
    return {
      warehouse,
      warehouseUrl,
      smtp,
      smtpUrl: smtp.url,
      async close() {
        await smtp.close();
        await warehouse.close();
      },
    };
  } catch (error) {
    await warehouse.close();
    throw error;
  }
}

export interface PaymentStackOptions {
  /** Default: SQLite. */
  database?: TestDatabase['name'];
  /** Settings of the worker beyond the test defaults, e.g. `ALERT_WEBHOOK_URL` of a local sink. */
  settings?: NodeJS.ProcessEnv;
  /** Extra options of the in-process payment worker; `false`: the test runs its own workers. */
  worker?: Partial<WorkerOptions> | false;
  /** How long the webhook waits for Temporal before 503 (default 5000 ms). */
  startTimeoutMs?: number;
  /** Serve the app on a free port of 127.0.0.1 (`baseUrl`); otherwise inject requests. */
  listen?: boolean;
  /** The app's settings beyond the test defaults, e.g. the Stripe and Standard secrets. */
  appConfig?: TestAppOptions['config'];
}

/**
 * The payment system end to end on the test's Temporal server, as `npm start` wires it: a fresh
 * database, the warehouse simulator, the SMTP sink, the payment worker on task queue `payments`
 * with the production workflows and activities, and the HTTP app whose webhook starts payments.
 */
export interface HttpReply {
  status: number;
  body: Record<string, unknown>;
}

export interface PaymentStack {
  db: TestDatabaseHandle;
  orders: OrdersRepository;
  payments: PaymentsRepository;
  warehouse: WarehouseSimulator;
  warehouseUrl: string;
  smtp: SmtpSink;
  starter: PaymentStarter;
  app: FastifyInstance;
  /** Where the app listens, with `listen: true`. */
  baseUrl: string;
  /** A request to the listening app over real HTTP: its status and JSON body. */
  http(path: string, init?: RequestInit): Promise<HttpReply>;
  /** The provider's delivery over real HTTP: the raw JSON, signed with the test secret. */
  deliver(event: object): Promise<HttpReply>;
  /** Stops all of it (not the Temporal server): app, worker, sink, simulator, database. */
  close(): Promise<void>;
}

export async function startPaymentStack(
  env: TestWorkflowEnvironment,
  options: PaymentStackOptions = {},
): Promise<PaymentStack> {
  const stops: Array<() => Promise<unknown>> = [];
  const close = async () => {
    for (const stop of stops.reverse()) await stop();
  };
  try {
    const database = testDatabases.find((d) => d.name === (options.database ?? 'sqlite'));
    if (!database) throw new Error(`no ${options.database} test database`);
    const db = await database.create();
    stops.push(() => db.close());
    const partners = await startPartners();
    stops.push(() => partners.close());
    const { warehouse, warehouseUrl, smtp } = partners;
    if (options.worker !== false) {
      const worker: Worker = await createPaymentWorker({
        connection: env.nativeConnection,
        namespace: env.namespace ?? 'default',
        activities: activityDepsFromConfig(
          loadConfig({ NODE_ENV: 'test', MAIL_FROM: TEST_MAIL_FROM, ...options.settings }),
          db,
          { warehouseUrl, temporalUiUrl: undefined, smtpUrl: smtp.url },
        ),
        overrides: options.worker,
      });
      stops.push(runUntilStopped(worker).stop);
    }
    const starter = createPaymentStarter(env.client, {
      startTimeoutMs: options.startTimeoutMs ?? 5000,
    });
    const orders = createOrdersRepository(db.db);
    const payments = createPaymentsRepository(db.db);
    const app = await buildTestApp({
      // The webhook keeps what it cannot act on in this database's unmatched inbox.
      db,
      config: options.appConfig,
      payments: starter,
      ordersRepository: orders,
      paymentsRepository: payments,
    });
    stops.push(() => app.close());
    const baseUrl = options.listen ? await app.listen({ port: 0, host: '127.0.0.1' }) : '';
    const http = async (path: string, init: RequestInit = {}): Promise<HttpReply> => {
      if (!baseUrl) throw new Error('startPaymentStack({ listen: true }) serves the app over HTTP');
      const response = await fetch(new URL(path, baseUrl), init);
      return { status: response.status, body: (await response.json()) as HttpReply['body'] };
    };
    const deliver = (event: object) => {
      const raw = JSON.stringify(event);
      return http(PAYMENT_WEBHOOK_PATH, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-payment-signature': signBody(raw, TEST_WEBHOOK_SECRET),
        },
        body: raw,
      });
    };
    return {
      db,
      orders,
      payments,
      warehouse,
      warehouseUrl,
      smtp,
      starter,
      app,
      baseUrl,
      http,
      deliver,
      close,
    };
  } catch (error) {
    await close();
    throw error;
  }
}
