import Fastify, {
  type FastifyBaseLogger,
  type FastifyInstance,
  type FastifyServerOptions,
} from 'fastify';
import { type Config, WEBHOOK_SECURITY_DEFAULTS } from '../config';
import type { createOrdersRepository, createPaymentsRepository } from '../db';
import type { PaymentStarter } from '../temporal/payment-starter';
import { registerErrorHandler } from './errors';
import { codecRoutes, type CodecRouteOptions } from './routes/codec';
import { healthRoutes, type ReadinessCheck } from './health';
import { registerJsonBodyParser } from './json-body';
import { createHttpMetrics, type HttpMetrics, registerHttpMetrics } from './metrics';
import { createFailureLimiter } from './rate-limit';
import { ordersRoutes } from './routes/orders';
import { paymentWebhookRoutes } from './routes/payment-webhook';
import { createWebhookVerifier } from './webhook-auth';

/** Webhook hardening settings; each falls back to its config default when left out. */
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
  config: Pick<Config, 'PAYMENT_WEBHOOK_SECRET' | 'WEBHOOK_BODY_LIMIT_BYTES'> &
    Partial<WebhookSecurityConfig>;
  /** Our pino logger; typed as Fastify's logger interface so routes see plain FastifyInstance. */
  logger: FastifyBaseLogger;
  payments: PaymentStarter;
  ordersRepository: ReturnType<typeof createOrdersRepository>;
  paymentsRepository: ReturnType<typeof createPaymentsRepository>;
  /** Milliseconds since the epoch, for the signature's tolerance window and the rate limiter. */
  now?: () => number;
  /** What GET /readyz checks (database, Temporal); none: ready whenever the process answers. */
  readiness?: readonly ReadinessCheck[];
  /** Where GET /metrics counts; default: a registry of the app's own. */
  metrics?: HttpMetrics;
  /** The codec endpoint for the Web UI (POST /codec/decode, /codec/encode), when payloads are encrypted. */
  codec?: CodecRouteOptions;
}

/** Builds the HTTP app without listening, so tests can inject requests into it. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const config = withWebhookDefaults(deps.config);
  const app = Fastify({
    loggerInstance: deps.logger,
    requestIdHeader: 'x-request-id',
    // request.ip is the key of the webhook's rate limit: behind a proxy it must be the client's.
    trustProxy: config.HTTP_TRUST_PROXY as FastifyServerOptions['trustProxy'],
  });
  registerErrorHandler(app);
  registerJsonBodyParser(app);
  const metrics = deps.metrics ?? createHttpMetrics();
  registerHttpMetrics(app, metrics);

  await app.register(healthRoutes, { readiness: deps.readiness ?? [] });

  await app.register(paymentWebhookRoutes, {
    verify: createWebhookVerifier({
      scheme: config.WEBHOOK_SIGNATURE_SCHEME,
      secret: config.PAYMENT_WEBHOOK_SECRET,
      previousSecret: config.PAYMENT_WEBHOOK_SECRET_PREVIOUS,
      toleranceSeconds: config.WEBHOOK_TOLERANCE_SECONDS,
      now: deps.now,
    }),
    failures: createFailureLimiter({
      limit: config.WEBHOOK_AUTH_FAILURE_LIMIT,
      windowMs: config.WEBHOOK_AUTH_FAILURE_WINDOW_SECONDS * 1000,
      maxClients: config.WEBHOOK_AUTH_FAILURE_MAX_CLIENTS,
      now: deps.now,
    }),
    bodyLimitBytes: config.WEBHOOK_BODY_LIMIT_BYTES,
    payments: metrics.instrumentPaymentStarter(deps.payments),
  });
  await app.register(ordersRoutes, {
    orders: deps.ordersRepository,
    payments: deps.paymentsRepository,
  });
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
