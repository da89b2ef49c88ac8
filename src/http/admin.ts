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

/**
 * ADMIN_ADDRESS, loopback by default: what these reveal is for operators and probes, so it is a
 * socket the internet-facing port and its Ingress never reach, not a token a Prometheus or a
 * kubelet would have to carry.
 */
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
