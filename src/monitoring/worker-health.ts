import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { State, Worker } from '@temporalio/worker';
import { parseListenAddress } from '../net/addresses';

/**
 * The worker's health endpoints, for Kubernetes probes. The SDK's Prometheus endpoint serves
 * /metrics only, so this small server sits beside it.
 *
 * - `/healthz` (liveness): 200 while every worker runs or is draining. A worker that is shutting
 *   down gracefully is finishing activities: restarting it would cut them short. 503 once a
 *   worker has failed or stopped, so the orchestrator replaces the process.
 * - `/readyz` (readiness): 200 only while every worker polls (RUNNING).
 * - Before any worker exists (the process waits for Temporal), live but not ready.
 */
export interface WorkerHealthServer {
  /** http://host:port of the server. */
  url: string;
  close(): Promise<void>;
}

export interface WorkerHealthOptions {
  /** host:port to listen on; port 0 picks a free one. */
  address: string;
  /** May be empty at first and filled once the workers exist: the server reads it per request. */
  workers: ReadonlyArray<Pick<Worker, 'getState'>>;
}

const DEAD_STATES: ReadonlySet<State> = new Set<State>(['FAILED', 'STOPPED']);

export async function startWorkerHealthServer(
  options: WorkerHealthOptions,
): Promise<WorkerHealthServer> {
  const { host, port } = parseListenAddress(options.address);
  const server: Server = createServer((request, response) => {
    const states = options.workers.map((w) => w.getState());
    const path = (request.url ?? '/').split('?')[0];
    let healthy: boolean;
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      response.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    // No worker yet: the process is still waiting for Temporal. Alive (restarting it would not
    // bring Temporal back), but not ready.
    if (path === '/healthz') healthy = states.every((s) => !DEAD_STATES.has(s));
    else if (path === '/readyz')
      healthy = states.length > 0 && states.every((s) => s === 'RUNNING');
    else {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: `no route for ${request.method} ${path}` }));
      return;
    }
    response.writeHead(healthy ? 200 : 503, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ status: healthy ? 'ok' : 'unavailable', workers: states }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host, port }, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Probes hold no keep-alive connection worth waiting for at shutdown.
  server.keepAliveTimeout = 1_000;
  const bound = server.address() as AddressInfo;
  const urlHost = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  return {
    url: `http://${urlHost}:${bound.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
