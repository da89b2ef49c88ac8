import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyServerOptions,
} from 'fastify';
import { type Config, DEFAULT_SHOP_CURRENCY, WEBHOOK_SECURITY_DEFAULTS } from '../config';
import type { createOrdersRepository, createPaymentsRepository, UnmatchedInbox } from '../db';
import type { ThinEventStarter } from '../temporal/thin-event-starter';
import type { PaymentStarter } from '../temporal/payment-starter';
import { registerErrorHandler } from './errors';
import { codecRoutes, type CodecRouteOptions } from './routes/codec';
import { livenessRoutes } from './health';
import { CompletedRequestLog } from './request-log';
import { registerJsonBodyParser } from './json-body';
import { createHttpMetrics, type HttpMetrics, registerHttpMetrics } from './metrics';
import { createFailureLimiter } from './rate-limit';
import {
  createOrdersAuth,
  type OrdersApiAccess,
  type OrdersApiConfig,
  ordersApiAccess,
} from './orders-auth';
import { ordersRoutes } from './routes/orders';
import { configuredProviders, type ProvidersConfig } from './providers';
import { paymentWebhookRoutes } from './routes/payment-webhook';

type WebhookSecurityConfig = Pick<
  Config,
  | 'PAYMENT_WEBHOOK_SECRET_PREVIOUS'
  | 'WEBHOOK_SIGNATURE_SCHEME'
  | 'WEBHOOK_TOLERANCE_SECONDS'
  | 'WEBHOOK_AUTH_FAILURE_LIMIT'
  | 'WEBHOOK_AUTH_FAILURE_WINDOW_SECONDS'
  | 'WEBHOOK_AUTH_FAILURE_MAX_CLIENTS'
  | 'HTTP_TRUST_PROXY'
>;

export interface AppDeps {
  /** Left out: loadConfig's defaults, an open development API on loopback as `npm start` serves. */
  config: Pick<Config, 'PAYMENT_WEBHOOK_SECRET' | 'WEBHOOK_BODY_LIMIT_BYTES'> &
    Partial<WebhookSecurityConfig> &
    ProvidersConfig &
    Partial<Pick<Config, 'SHOP_CURRENCY'>> &
    Partial<OrdersApiConfig>;
  /** Our pino logger; typed as Fastify's logger interface so routes see plain FastifyInstance. */
  logger: FastifyBaseLogger;
  payments: PaymentStarter;
  unmatchedRepository: UnmatchedInbox;
  /** Starts the fetch of Stripe thin events; unset (no STRIPE_API_KEY): they are kept as unmatched. */
  thinEvents?: ThinEventStarter;
  ordersRepository: ReturnType<typeof createOrdersRepository>;
  paymentsRepository: ReturnType<typeof createPaymentsRepository>;
  now?: () => number;
  metrics?: HttpMetrics;
  ordersApi?: OrdersApiAccess;
  /** The codec endpoint for the Web UI (POST /codec/decode, /codec/encode), when payloads are encrypted. */
  codec?: CodecRouteOptions;
}

/** Without listening, so tests can inject requests. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const config = withWebhookDefaults(deps.config);
  // Before anything is built: a refused configuration (production without keys) throws here.
  const ordersApi = deps.ordersApi ?? ordersApiAccess(config);
  const app = Fastify({
    loggerInstance: deps.logger,
    logController: new CompletedRequestLog(),
    requestIdHeader: 'x-request-id',
    // request.ip is the key of the webhook's rate limit: behind a proxy it must be the client's.
    trustProxy: config.HTTP_TRUST_PROXY as FastifyServerOptions['trustProxy'],
  });
  registerErrorHandler(app);
  registerJsonBodyParser(app);
  const metrics = deps.metrics ?? createHttpMetrics();
  registerHttpMetrics(app, metrics);

  await app.register(livenessRoutes);

  // One limiter for every provider's endpoint: a client guessing at one is refused at all.
  const failures = createFailureLimiter({
    limit: config.WEBHOOK_AUTH_FAILURE_LIMIT,
    windowMs: config.WEBHOOK_AUTH_FAILURE_WINDOW_SECONDS * 1000,
    maxClients: config.WEBHOOK_AUTH_FAILURE_MAX_CLIENTS,
    now: deps.now,
  });
  const payments = metrics.instrumentPaymentStarter(deps.payments);
  const unmatched = metrics.instrumentUnmatched(deps.unmatchedRepository);
  const providers = configuredProviders(
    {
      scheme: config.WEBHOOK_SIGNATURE_SCHEME,
      secret: config.PAYMENT_WEBHOOK_SECRET,
      previousSecret: config.PAYMENT_WEBHOOK_SECRET_PREVIOUS,
      toleranceSeconds: config.WEBHOOK_TOLERANCE_SECONDS,
      now: deps.now,
    },
    config,
    deps.now,
  );
  for (const provider of providers) {
    await app.register(paymentWebhookRoutes, {
      provider,
      failures,
      bodyLimitBytes: config.WEBHOOK_BODY_LIMIT_BYTES,
      payments,
      unmatched,
      thinEvents: deps.thinEvents,
      shopCurrency: config.SHOP_CURRENCY ?? DEFAULT_SHOP_CURRENCY,
    });
  }
  if (ordersApi.kind !== 'off') {
    await app.register(ordersRoutes, {
      orders: deps.ordersRepository,
      payments: deps.paymentsRepository,
      auth: createOrdersAuth(ordersApi),
    });
  }
  if (deps.codec) await app.register(codecRoutes, deps.codec);
  return app;
}

function withWebhookDefaults(config: AppDeps['config']) {
  const d = WEBHOOK_SECURITY_DEFAULTS;
  return {
    ...config,
    WEBHOOK_SIGNATURE_SCHEME: config.WEBHOOK_SIGNATURE_SCHEME ?? d.WEBHOOK_SIGNATURE_SCHEME,
    WEBHOOK_TOLERANCE_SECONDS: config.WEBHOOK_TOLERANCE_SECONDS ?? d.WEBHOOK_TOLERANCE_SECONDS,
    WEBHOOK_AUTH_FAILURE_LIMIT: config.WEBHOOK_AUTH_FAILURE_LIMIT ?? d.WEBHOOK_AUTH_FAILURE_LIMIT,
    WEBHOOK_AUTH_FAILURE_WINDOW_SECONDS:
      config.WEBHOOK_AUTH_FAILURE_WINDOW_SECONDS ?? d.WEBHOOK_AUTH_FAILURE_WINDOW_SECONDS,
    WEBHOOK_AUTH_FAILURE_MAX_CLIENTS:
      config.WEBHOOK_AUTH_FAILURE_MAX_CLIENTS ?? d.WEBHOOK_AUTH_FAILURE_MAX_CLIENTS,
    HTTP_TRUST_PROXY: config.HTTP_TRUST_PROXY ?? false,
  };
}
