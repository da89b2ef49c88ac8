import type { Client, Connection } from '@temporalio/client';
import type { FastifyInstance, LogLevel } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../db';
import {
  DeadlineExceededError,
  errorMessage,
  pingDatabase,
  pingTemporal,
  withDeadline,
} from '../monitoring/probes';
import { describeBuildPollers } from '../monitoring/build-pollers';
import { describeDeployment } from '../temporal/deployments';

export interface ReadinessCheck {
  name: string;
  /** Settles by `deadline` (epoch ms) if it can; the probe answers by then either way. */
  check: (deadline: number) => Promise<unknown>;
  /** Its error message is a configuration problem safe to show (no addresses, no secrets). */
  explain?: boolean;
  /** Reported, but no reason to leave the load balancer: not ours to fix, and intake still queues. */
  advisory?: boolean;
}

export interface HealthRoutesOptions {
  readiness: readonly ReadinessCheck[];
  /** Per check; a probe must answer well within the orchestrator's own probe timeout. */
  timeoutMs?: number;
}

/** Below deploy/kubernetes' 3 s probe timeout: a hung dependency gets a 503 with its name. */
export const READINESS_TIMEOUT_MS = 2_000;

export function databaseReadiness(db: Kysely<Database>): ReadinessCheck {
  return { name: 'database', check: () => pingDatabase(db) };
}

/** Under a gRPC deadline: without one, the client retries an unreachable server for 20 s. */
export function temporalReadiness(
  connection: Pick<Connection, 'workflowService' | 'withDeadline'>,
): ReadinessCheck {
  return {
    name: 'temporal',
    check: (deadline) => connection.withDeadline(deadline, () => pingTemporal(connection)),
  };
}

/**
 * Advisory: a stranded rollback shows here and in `ops doctor` while webhooks are still queued.
 * Passes without a deployment or with unversioned workers.
 */
export function workersReadiness(
  client: Client,
  deployment: { deploymentName: string; versioned: boolean },
  taskQueues: readonly string[],
  /** A poll older than this no longer counts (default 2 minutes); tests on fast polls shorten it. */
  freshMs?: number,
): ReadinessCheck {
  return {
    name: 'workers',
    advisory: true,
    explain: true,
    check: async (deadline) => {
      if (!deployment.versioned) return;
      const state = await client.connection.withDeadline(deadline, () =>
        describeDeployment(client, deployment.deploymentName),
      );
      const builds = [state?.current, state?.ramping?.buildId].filter((b) => b !== undefined);
      for (const buildId of builds) {
        const pollers = await describeBuildPollers(
          client.connection,
          client.options.namespace,
          { deploymentName: deployment.deploymentName, buildId },
          taskQueues,
          { timeoutMs: Math.max(1, deadline - Date.now()), freshMs },
        );
        if (pollers.missing.length > 0) {
          throw new Error(
            `no live worker of build ${buildId} polls ${pollers.missing.join(', ')}: its new runs wait (npm run ops -- doctor)`,
          );
        }
      }
    },
  };
}

/** For the public listener: a load balancer learns nothing else (no dependency names, versions). */
export async function livenessRoutes(app: FastifyInstance) {
  // Probes come every few seconds: their request lines would drown the log.
  app.get('/healthz', { logLevel: quietLogLevel(app) }, async () => ({ status: 'ok' }));
}

/**
 * `/healthz` checks nothing, so a Temporal outage never gets healthy processes restarted. Admin
 * listener only: which dependency is down is for operators, not for the internet.
 */
export async function healthRoutes(app: FastifyInstance, options: HealthRoutesOptions) {
  const timeoutMs = options.timeoutMs ?? READINESS_TIMEOUT_MS;
  let wasReady: boolean | undefined;
  // Checks that outlived their probe's answer. Closing waits for them, so the caller can close
  // the connections they use right after (a gRPC retry on a closed channel throws).
  const unsettled = new Set<Promise<unknown>>();
  app.addHook('onClose', async () => {
    await Promise.allSettled([...unsettled]);
  });

  await livenessRoutes(app);
  const logLevel = quietLogLevel(app);
  app.get('/readyz', { logLevel }, async (request, reply) => {
    const results = await Promise.all(
      options.readiness.map(async ({ name, check }) => {
        const running = check(Date.now() + timeoutMs);
        unsettled.add(running);
        running.then(
          () => unsettled.delete(running),
          () => unsettled.delete(running),
        );
        try {
          await withDeadline(name, timeoutMs, () => running);
          return { name, ok: true, outcome: 'ok', error: undefined };
        } catch (error) {
          const outcome = isTimeout(error) ? 'timeout' : 'failed';
          return { name, ok: false, outcome, error: errorMessage(error) };
        }
      }),
    );
    const advisory = (name: string) => options.readiness.find((c) => c.name === name)?.advisory;
    const ready = results.every((r) => r.ok || advisory(r.name));
    if (ready !== wasReady) {
      const failed = results.filter((r) => !r.ok).map(({ name, error }) => ({ name, error }));
      if (ready) request.log.info('ready: every dependency answers');
      else request.log.warn({ failed }, 'not ready: a dependency does not answer');
      wasReady = ready;
    }
    const explained = results.filter(
      (r) =>
        !r.ok &&
        r.outcome === 'failed' &&
        options.readiness.find((c) => c.name === r.name)?.explain,
    );
    const warnings = results.filter((r) => !r.ok && advisory(r.name));
    return reply.code(ready ? 200 : 503).send({
      status: ready ? 'ready' : 'unavailable',
      checks: Object.fromEntries(results.map((r) => [r.name, r.outcome])),
      ...(explained.length > 0
        ? { reasons: Object.fromEntries(explained.map((r) => [r.name, r.error])) }
        : {}),
      ...(warnings.length > 0 ? { warnings: warnings.map((r) => r.name) } : {}),
    });
  });
}

// Ours, or the gRPC deadline's (DEADLINE_EXCEEDED is gRPC status 4).
function isTimeout(error: unknown): boolean {
  return error instanceof DeadlineExceededError || (error as { code?: unknown })?.code === 4;
}

const LEVELS: readonly LogLevel[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'];

/** `warn`, or the app's own level when quieter (a route's level replaces the app's). */
export function quietLogLevel(app: FastifyInstance): LogLevel {
  const current = LEVELS.find((level) => level === app.log.level);
  return current && LEVELS.indexOf(current) > LEVELS.indexOf('warn') ? current : 'warn';
}
