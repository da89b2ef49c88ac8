import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { State, Worker } from '@temporalio/worker';
import { parseListenAddress } from '../net/addresses';
import { errorMessage, withDeadline } from './probes';

/** `/healthz` stays 200 while a worker drains: restarting it would cut its activities short. */
export interface WorkerHealthServer {
  url: string;
  close(): Promise<void>;
}

export interface WorkerHealthOptions {
  /** host:port to listen on; port 0 picks a free one. */
  address: string;
  /** Read per request: may be filled once the workers exist. */
  workers: ReadonlyArray<Pick<Worker, 'getState'>>;
  readiness?: ReadonlyArray<{ name: string; check: (deadline: number) => Promise<unknown> }>;
  /** Per readiness check; below the usual 3 s probe timeout. */
  readinessTimeoutMs?: number;
}

const DEAD_STATES: ReadonlySet<State> = new Set<State>(['FAILED', 'STOPPED']);

export async function startWorkerHealthServer(
  options: WorkerHealthOptions,
): Promise<WorkerHealthServer> {
  const { host, port } = parseListenAddress(options.address);
  const handle = async (request: IncomingMessage, response: ServerResponse) => {
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
    else if (path === '/readyz') {
      healthy = states.length > 0 && states.every((s) => s === 'RUNNING');
      const reasons = healthy ? await failedChecks(options) : {};
      if (Object.keys(reasons).length > 0) {
        response.writeHead(503, { 'content-type': 'application/json' });
        response.end(JSON.stringify({ status: 'unavailable', workers: states, reasons }));
        return;
      }
    } else {
      response.writeHead(404, { 'content-type': 'application/json' });
      response.end(JSON.stringify({ error: `no route for ${request.method} ${path}` }));
      return;
    }
    response.writeHead(healthy ? 200 : 503, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ status: healthy ? 'ok' : 'unavailable', workers: states }));
  };
  const server: Server = createServer((request, response) => {
    handle(request, response).catch(() => response.destroy());
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

async function failedChecks(options: WorkerHealthOptions): Promise<Record<string, string>> {
  const timeoutMs = options.readinessTimeoutMs ?? 2_000;
  const failed = await Promise.all(
    (options.readiness ?? []).map(async ({ name, check }) => {
      try {
        await withDeadline(name, timeoutMs, () => check(Date.now() + timeoutMs));
        return undefined;
      } catch (error) {
        return [name, errorMessage(error)] as const;
      }
    }),
  );
  return Object.fromEntries(failed.filter((f) => f !== undefined));
}
