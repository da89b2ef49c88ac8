import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import Fastify, { type FastifyInstance } from 'fastify';
import { loadConfig } from '../../src/config';
import type { Client } from '@temporalio/client';
import {
  createDatabase,
  createOrdersRepository,
  createPaymentsRepository,
  createUnmatchedRepository,
  type DatabaseHandle,
} from '../../src/db';
import { buildApp } from '../../src/http/app';
import { createLogger } from '../../src/logger';
import { PAYMENTS_TASK_QUEUE, paymentWorkflowId } from '../../src/shared/constants';
import type { PaymentWorkflowInput } from '../../src/shared/payment';
import {
  OrderIdSearchAttribute,
  PaymentEventIdSearchAttribute,
} from '../../src/shared/search-attributes';
import { createLazyClient } from '../../src/temporal/connection';
import { createPaymentStarter } from '../../src/temporal/payment-starter';
import type { paymentWorkflow } from '../../src/workflows';
import { serveHost } from '../lib/host';
import { closedLoop, type LoopResult } from '../lib/loop';
import { BARE_PATH } from '../lib/names';

/**
 * The HTTP process of the benchmarks, wired as src/http/server.ts wires production: config from
 * the environment, the pino logger at `info` writing JSON to stdout (a log file here), the lazy
 * Temporal client and createPaymentStarter. Beside it, on other ports and in the same process:
 *  - the same app with a silent logger (what logging costs),
 *  - a bare Fastify endpoint that answers 200 (what HTTP alone costs),
 * and a command that runs the raw `client.workflow.start` loop on the same client.
 */

async function main(): Promise<void> {
  const config = loadConfig({ ...process.env, LOG_LEVEL: 'info' });
  if (!config.TEMPORAL_ADDRESS) throw new Error('the HTTP host needs TEMPORAL_ADDRESS');
  const db = createDatabase(config.DATABASE_URL);
  const client = createLazyClient({
    address: config.TEMPORAL_ADDRESS,
    namespace: config.TEMPORAL_NAMESPACE,
    settings: config.temporalConnection,
  });
  // The webhook's starter: payments through createPaymentStarter, as the raw loop is compared with.
  const starter = createPaymentStarter(client, {
    startTimeoutMs: config.TEMPORAL_START_TIMEOUT_MS,
  });
  const appDeps = {
    config,
    payments: starter,
    unmatchedRepository: createUnmatchedRepository(db.db),
    ordersRepository: createOrdersRepository(db.db),
    paymentsRepository: createPaymentsRepository(db.db),
  };
  const webhook = await buildApp({ ...appDeps, logger: createLogger(config, 'http') });
  const silent = await buildApp({ ...appDeps, logger: createLogger({ LOG_LEVEL: 'silent' }) });
  const bare = Fastify({ logger: false });
  bare.post(BARE_PATH, async () => ({ status: 'accepted' }));

  const origins: Record<'webhook' | 'silent' | 'bare', string> = {
    webhook: '',
    silent: '',
    bare: '',
  };
  origins.webhook = await listen(webhook);
  origins.silent = await listen(silent);
  origins.bare = await listen(bare);
  const profiler = new Session();
  profiler.connect();
  serveHost(httpHostApi({ client, origins, profiler, apps: [webhook, silent, bare], db }));
}

interface HttpHostState {
  client: Client;
  origins: Record<'webhook' | 'silent' | 'bare', string>;
  profiler: Session;
  apps: FastifyInstance[];
  db: DatabaseHandle;
}

/** The commands the driver calls. */
function httpHostApi({ client, origins, profiler, apps, db }: HttpHostState) {
  return {
    origins: async () => origins,
    /** Whether the raw loop starts workflows exactly as the starter does. */
    compareWithStarter,
    /**
     * Starts payment workflows straight through the client, with the starter's options, in a
     * closed loop at the given concurrency: the webhook's ceiling on this client and server.
     */
    rawStart: async (args: { concurrency: number; durationMs: number; idPrefix: string }) => {
      const result: LoopResult = await closedLoop({
        concurrency: args.concurrency,
        durationMs: args.durationMs,
        op: async (i) => {
          const input = { eventId: `${args.idPrefix}_${i}`, orderId: 1, amount: 5400 };
          await client.workflow.start<typeof paymentWorkflow>(
            'paymentWorkflow',
            rawStartOptions(input),
          );
        },
      });
      return result;
    },
    /** Starts the V8 sampling profiler (about 1 sample per 100 µs). */
    profileStart: async () => {
      await profiler.post('Profiler.enable');
      await profiler.post('Profiler.setSamplingInterval', { interval: 100 });
      await profiler.post('Profiler.start');
    },
    /** Stops the profiler and writes the .cpuprofile to `file`. */
    profileStop: async (args: { file: string }) => {
      const { profile } = await profiler.post('Profiler.stop');
      writeFileSync(args.file, JSON.stringify(profile));
      await profiler.post('Profiler.disable');
    },
    close: async () => {
      profiler.disconnect();
      for (const app of apps) await app.close();
      await client.connection.close();
      await db.close();
    },
  };
}

export type HttpHostApi = ReturnType<typeof httpHostApi>;

/** What createPaymentStarter passes to client.workflow.start, written out. */
function rawStartOptions(input: PaymentWorkflowInput) {
  return {
    workflowId: paymentWorkflowId(input.eventId),
    taskQueue: PAYMENTS_TASK_QUEUE,
    args: [input] as [PaymentWorkflowInput],
    workflowIdConflictPolicy: 'FAIL' as const,
    workflowIdReusePolicy: 'REJECT_DUPLICATE' as const,
    memo: { orderId: input.orderId, eventId: input.eventId, amount: input.amount },
    typedSearchAttributes: [
      { key: OrderIdSearchAttribute, value: input.orderId },
      { key: PaymentEventIdSearchAttribute, value: input.eventId },
    ],
  };
}

/**
 * Compares the raw loop's options with those createPaymentStarter really passes (caught with a
 * stand-in client), so the comparison stays like for like when the starter changes.
 */
async function compareWithStarter(): Promise<string> {
  let captured: Record<string, unknown> | undefined;
  const standIn = {
    connection: { withDeadline: (_deadline: number, fn: () => Promise<unknown>) => fn() },
    workflow: {
      start: (_type: string, options: Record<string, unknown>) => {
        captured = options;
        return Promise.resolve({ workflowId: options.workflowId });
      },
    },
  } as unknown as Client;
  const input = { eventId: 'compare_1', orderId: 7, amount: 100 };
  await createPaymentStarter(standIn, { startTimeoutMs: 1_000 }).start(input);
  const ours = canonical(rawStartOptions(input));
  const theirs = canonical(captured);
  return ours === theirs
    ? 'same options as createPaymentStarter'
    : `DIFFERENT from createPaymentStarter: starter ${theirs}, raw loop ${ours}`;
}

/** JSON with object keys sorted at every level, for comparing option objects. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => a.localeCompare(b)))
      : v,
  );
}

async function listen(app: FastifyInstance): Promise<string> {
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  if (!address || typeof address === 'string') throw new Error('no TCP address');
  return `http://127.0.0.1:${address.port}`;
}

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`http host: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
}
