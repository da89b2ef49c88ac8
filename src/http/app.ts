import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Config } from '../config';
import type { createOrdersRepository, createPaymentsRepository } from '../db';
import type { PaymentStarter } from '../temporal/payment-starter';
import { registerErrorHandler } from './errors';
import { ordersRoutes } from './routes/orders';
import { paymentWebhookRoutes } from './routes/payment-webhook';

export interface AppDeps {
  config: Pick<Config, 'PAYMENT_WEBHOOK_SECRET' | 'WEBHOOK_BODY_LIMIT_BYTES'>;
  /** Our pino logger; typed as Fastify's logger interface so routes see plain FastifyInstance. */
  logger: FastifyBaseLogger;
  payments: PaymentStarter;
  ordersRepository: ReturnType<typeof createOrdersRepository>;
  paymentsRepository: ReturnType<typeof createPaymentsRepository>;
}

/** Builds the HTTP app without listening, so tests can inject requests into it. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger,
    requestIdHeader: 'x-request-id',
  });
  registerErrorHandler(app);

  app.get('/healthz', async () => ({ status: 'ok' }));

  await app.register(paymentWebhookRoutes, {
    secret: deps.config.PAYMENT_WEBHOOK_SECRET,
    bodyLimitBytes: deps.config.WEBHOOK_BODY_LIMIT_BYTES,
    payments: deps.payments,
  });
  await app.register(ordersRoutes, {
    orders: deps.ordersRepository,
    payments: deps.paymentsRepository,
  });
  return app;
}
