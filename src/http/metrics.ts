import { AsyncLocalStorage } from 'node:async_hooks';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { PartnerPausesRepository, UnmatchedInbox } from '../db';
import { PARTNERS } from '../shared/partner';
import type { PaymentStarter } from '../temporal/payment-starter';
import { quietLogLevel } from './health';
import { WEBHOOKS_PATH_PREFIX } from './routes/payment-webhook';

// The HTTP process's Prometheus metrics (docs/operations.md lists them), at GET /metrics of the
// admin listener. The partner gauge is read from the database at each scrape, so every process
// reports the fleet-wide state; it is absent when the read fails (no stale 0 during an outage).
export interface HttpMetrics {
  readonly registry: Registry;
  /** Wraps the webhook's starter: only the starter can tell a first delivery from a duplicate. */
  instrumentPaymentStarter(starter: PaymentStarter): PaymentStarter;
  instrumentUnmatched(unmatched: UnmatchedInbox): UnmatchedInbox;
}

export interface HttpMetricsOptions {
  /** Once per process: the HTTP entries turn it on; tests that build many apps leave it off. */
  defaultMetrics?: boolean;
  partnerPauses?: Pick<PartnerPausesRepository, 'list'>;
}

// Webhook answers take milliseconds when Temporal is healthy and up to the start timeout
// (TEMPORAL_START_TIMEOUT_MS, 5 s by default) when it is not: buckets cover both ends.
const LATENCY_BUCKETS_SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

interface DeliveryScope {
  duplicate?: boolean;
  unmatched?: boolean;
}

interface Internals {
  deliveries: Counter<'outcome'>;
  webhookDuration: Histogram<'outcome'>;
  requestDuration: Histogram<'method' | 'route' | 'status_code'>;
  scope: AsyncLocalStorage<DeliveryScope>;
  scopes: WeakMap<FastifyRequest, DeliveryScope>;
}

const internals = new WeakMap<HttpMetrics, Internals>();

export function createHttpMetrics(options: HttpMetricsOptions = {}): HttpMetrics {
  // A registry per app, not prom-client's global one: two apps in one process (tests) never
  // collide on a metric name.
  const registry = new Registry();
  if (options.defaultMetrics) collectDefaultMetrics({ register: registry });
  if (options.partnerPauses) registerPartnerPausedGauge(registry, options.partnerPauses);
  const scope = new AsyncLocalStorage<DeliveryScope>();
  const metrics: HttpMetrics = {
    registry,
    instrumentPaymentStarter: (starter) => {
      const noted = async <T extends { duplicate: boolean }>(started: Promise<T>) => {
        const result = await started;
        const current = scope.getStore();
        if (current) current.duplicate = result.duplicate;
        return result;
      };
      return {
        start: (input) => noted(starter.start(input)),
        startRefund: (event) => noted(starter.startRefund(event)),
        startDispute: (event) => noted(starter.startDispute(event)),
      };
    },
    instrumentUnmatched: (unmatched) => {
      const noted = () => {
        const current = scope.getStore();
        if (current) current.unmatched = true;
      };
      return {
        async record(input) {
          const kept = await unmatched.record(input);
          noted();
          return kept;
        },
        // A duplicate delivery of a payment its workflow kept as unmatched counts as unmatched.
        async countRedelivery(eventId, reason) {
          const counted = await unmatched.countRedelivery(eventId, reason);
          if (counted) noted();
          return counted;
        },
      };
    },
  };
  internals.set(metrics, {
    deliveries: new Counter({
      name: 'order_payments_webhook_deliveries_total',
      help: 'Payment webhook deliveries by outcome: accepted, duplicate, ignored, or the refusal status code',
      labelNames: ['outcome'],
      registers: [registry],
    }),
    webhookDuration: new Histogram({
      name: 'order_payments_webhook_duration_seconds',
      help: 'Time to answer a payment webhook delivery, by outcome',
      labelNames: ['outcome'],
      buckets: LATENCY_BUCKETS_SECONDS,
      registers: [registry],
    }),
    requestDuration: new Histogram({
      name: 'order_payments_http_request_duration_seconds',
      help: 'Time to answer an HTTP request, by method, route and status code',
      labelNames: ['method', 'route', 'status_code'],
      buckets: LATENCY_BUCKETS_SECONDS,
      registers: [registry],
    }),
    scope,
    scopes: new WeakMap(),
  });
  return metrics;
}

/** Call on the root instance before any route is registered, so its hooks reach every route. */
export function registerHttpMetrics(app: FastifyInstance, metrics: HttpMetrics): void {
  const m = internals.get(metrics);
  if (!m) throw new Error('registerHttpMetrics needs metrics made by createHttpMetrics');

  // The handler and the starter it calls run inside this scope, where the starter leaves the
  // duplicate flag. preValidation runs after the body is read: the body's stream events would
  // otherwise carry the handler out of an earlier scope.
  app.addHook('preValidation', (request, _reply, done) => {
    if (!isWebhook(request)) return done();
    const delivery: DeliveryScope = {};
    m.scopes.set(request, delivery);
    m.scope.run(delivery, done);
  });

  app.addHook('onResponse', async (request, reply) => {
    const seconds = reply.elapsedTime / 1000;
    const route = request.routeOptions.url ?? 'unmatched';
    m.requestDuration.observe(
      { method: request.method, route, status_code: String(reply.statusCode) },
      seconds,
    );
    if (!isWebhook(request)) return;
    const outcome = webhookOutcome(reply, m.scopes.get(request));
    m.deliveries.inc({ outcome });
    m.webhookDuration.observe({ outcome }, seconds);
  });
}

/** Admin listener only: counts by route and the process's memory tell an attacker what works. */
export async function metricsRoutes(app: FastifyInstance, options: { metrics: HttpMetrics }) {
  const { registry } = options.metrics;
  app.get('/metrics', { logLevel: quietLogLevel(app) }, async (_request, reply) =>
    reply.type(registry.contentType).send(await registry.metrics()),
  );
}

function isWebhook(request: FastifyRequest): boolean {
  // Every provider's endpoint (an unmatched path has no route URL, and is no delivery).
  return (
    request.method === 'POST' && request.routeOptions.url?.startsWith(WEBHOOKS_PATH_PREFIX) === true
  );
}

function webhookOutcome(reply: FastifyReply, delivery: DeliveryScope | undefined): string {
  if (reply.statusCode !== 200) return String(reply.statusCode);
  if (delivery?.unmatched) return 'unmatched';
  // The route names the workflow on every delivery it queued, and on no ignored one.
  if (reply.getHeader('x-workflow-id') === undefined) return 'ignored';
  return delivery?.duplicate ? 'duplicate' : 'accepted';
}

function registerPartnerPausedGauge(
  registry: Registry,
  pauses: Pick<PartnerPausesRepository, 'list'>,
): void {
  new Gauge({
    name: 'order_payments_partner_paused',
    help: 'Whether an operator has the partner paused (1) or not (0): its calls are held',
    labelNames: ['partner'],
    registers: [registry],
    async collect() {
      this.reset();
      // A database that cannot answer must not cost the scrape its other metrics.
      const all = await pauses.list().catch(() => undefined);
      if (!all) return;
      const paused = new Set(all.filter((p) => p.resumedAt === null).map((p) => p.partner));
      for (const partner of PARTNERS) this.set({ partner }, paused.has(partner) ? 1 : 0);
    },
  });
}
