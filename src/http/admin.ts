import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { localHttpUrl, parseListenAddress } from '../net/addresses';
import { registerErrorHandler } from './errors';
import { healthRoutes, type ReadinessCheck } from './health';
import { type HttpMetrics, metricsRoutes } from './metrics';

export interface AdminAppDeps {
  logger: FastifyBaseLogger;
  /** What GET /readyz checks (database, Temporal); none: ready whenever the process answers. */
  readiness?: readonly ReadinessCheck[];
  /** The public app's metrics (the same object passed to buildApp), served at GET /metrics. */
  metrics: HttpMetrics;
}

/**
 * The admin listener of the HTTP process (ADMIN_ADDRESS, loopback by default): /metrics,
 * /readyz with its per-dependency checks, and /healthz. What these reveal (traffic by route and
 * status, which dependency is down, the process's memory) is for operators and probes, so it is
 * served on a socket of its own that the internet-facing port and its Ingress never reach,
 * rather than behind a token a Prometheus or a kubelet would have to carry. Built without
 * listening, like buildApp.
 */
export async function buildAdminApp(deps: AdminAppDeps): Promise<FastifyInstance> {
  const app = Fastify({ loggerInstance: deps.logger.child({ listener: 'admin' }) });
  registerErrorHandler(app);
  await app.register(healthRoutes, { readiness: deps.readiness ?? [] });
  await app.register(metricsRoutes, { metrics: deps.metrics });
  return app;
}

/**
 * Listens on ADMIN_ADDRESS (host:port) and returns the URL to reach it. A port already taken
 * fails the start: a process whose probes and metrics are missing is not one to run.
 */
export async function listenAdmin(app: FastifyInstance, address: string): Promise<string> {
  const { host, port } = parseListenAddress(address);
  await app.listen({ host, port });
  const bound = app.server.address();
  return localHttpUrl(host, typeof bound === 'object' && bound ? bound.port : port);
}
