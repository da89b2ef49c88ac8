import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { localHttpUrl, parseListenAddress } from '../net/addresses';
import { registerErrorHandler } from './errors';
import { healthRoutes, type ReadinessCheck } from './health';
import { type HttpMetrics, metricsRoutes } from './metrics';

export interface AdminAppDeps {
  logger: FastifyBaseLogger;
  /** What GET /readyz checks (database, Temporal); none: ready whenever the process answers. */
  readiness?: readonly ReadinessCheck[];
  metrics: HttpMetrics;
}

/** A loopback socket the Ingress never reaches, not a token every Prometheus would carry. */
export async function buildAdminApp(deps: AdminAppDeps): Promise<FastifyInstance> {
  const app = Fastify({ loggerInstance: deps.logger.child({ listener: 'admin' }) });
  registerErrorHandler(app);
  await app.register(healthRoutes, { readiness: deps.readiness ?? [] });
  await app.register(metricsRoutes, { metrics: deps.metrics });
  return app;
}

/** A port already taken fails the start: a process without probes and metrics is not one to run. */
export async function listenAdmin(app: FastifyInstance, address: string): Promise<string> {
  const { host, port } = parseListenAddress(address);
  await app.listen({ host, port });
  const bound = app.server.address();
  return localHttpUrl(host, typeof bound === 'object' && bound ? bound.port : port);
}
