import { Client } from '@temporalio/client';
import {
  NativeConnection,
  Worker,
  type InjectedSinks,
  type WorkerOptions,
} from '@temporalio/worker';
import { loadConfig } from '../../src/config';
import { createDatabase, type DatabaseHandle } from '../../src/db';
import { createLogger } from '../../src/logger';
import { nativeConnectionOptions } from '../../src/temporal/connection';
import { installTemporalRuntime } from '../../src/temporal/runtime';
import { startWorkerRuntime } from '../../src/workers/runtime';
import { createBenchActivities } from '../activities';
import type { BenchSinks } from '../workflows';
import { ActivityTimings } from '../lib/activity-timing';
import { serveHost } from '../lib/host';

/**
 * The worker process of the benchmarks: the production payments worker (src/workers/runtime.ts,
 * as `npm run worker` runs it) and, beside it on its own task queue, the bench workflows' worker
 * with the same settings. Its stdout is its log file.
 *
 * Settings come from the environment the driver sets (see WorkerHostEnv).
 */

export interface WorkerHostEnv {
  TEMPORAL_ADDRESS: string;
  DATABASE_URL: string;
  WAREHOUSE_API_URL: string;
  SMTP_URL: string;
  BENCH_PAYMENTS_BUNDLE: string;
  BENCH_BENCH_BUNDLE: string;
  /** Task queue of the bench workflows. */
  BENCH_TASK_QUEUE: string;
  /** Unset: the SDK's default workflow cache size. */
  BENCH_MAX_CACHED_WORKFLOWS?: string;
}

async function main(): Promise<void> {
  const env = process.env as NodeJS.ProcessEnv & WorkerHostEnv;
  // The payments bundle the driver built, loaded as production loads dist/workflow-bundle.js.
  const config = loadConfig({
    ...env,
    LOG_LEVEL: 'info',
    WORKFLOW_BUNDLE_PATH: env.BENCH_PAYMENTS_BUNDLE,
  });
  const logger = createLogger(config, 'worker');
  installTemporalRuntime(logger);
  const db = createDatabase(config.DATABASE_URL);
  const connection = await NativeConnection.connect(
    nativeConnectionOptions(config.temporalConnection, { address: env.TEMPORAL_ADDRESS }),
  );
  const timings = new ActivityTimings();
  let arrivals = 0;

  const shared: Partial<WorkerOptions> = {
    ...(env.BENCH_MAX_CACHED_WORKFLOWS === undefined
      ? {}
      : { maxCachedWorkflows: Number(env.BENCH_MAX_CACHED_WORKFLOWS) }),
  };
  // The production payments worker, versioned as in production (the build of this bundle,
  // PINNED runs, made current when none is), with the bench's timing interceptor instead of the
  // crash points'.
  const runtime = await startWorkerRuntime({
    config,
    logger,
    connection,
    db,
    queues: ['payments'],
    currentBuild: 'if-none',
    overrides: { ...shared, interceptors: { activity: [timings.interceptor] } },
  });
  const bench = await Worker.create({
    ...shared,
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueue: env.BENCH_TASK_QUEUE,
    workflowBundle: { codePath: env.BENCH_BENCH_BUNDLE },
    activities: createBenchActivities({
      client: new Client({ connection, namespace: config.TEMPORAL_NAMESPACE }),
    }),
    sinks: {
      bench: { arrived: { fn: () => void (arrivals += 1) } },
    } satisfies InjectedSinks<BenchSinks>,
    interceptors: { activity: [timings.interceptor] },
  });
  const workers = [...runtime.workers, bench];
  const running = Promise.all([runtime.done, bench.run()]);
  await runtime.current;

  serveHost(workerHostApi({ workers, running, timings, arrivals: () => arrivals, connection, db }));
}

interface WorkerHostState {
  workers: Worker[];
  running: Promise<unknown>;
  timings: ActivityTimings;
  arrivals: () => number;
  connection: NativeConnection;
  db: DatabaseHandle;
}

/** The commands the driver calls. */
function workerHostApi({ workers, running, timings, arrivals, connection, db }: WorkerHostState) {
  return {
    /** Activity timings since the last call. */
    timings: async () => timings.take(),
    /** [order ID, epoch ms] of each shipment marked requested since the last call. */
    shipments: async () => timings.takeShipments(),
    /** Worker state and this process's memory, after a full GC when --expose-gc is on. */
    status: async (args: { gc?: boolean } | undefined) => {
      if (args?.gc && global.gc) {
        global.gc();
        global.gc();
      }
      const [p, b] = workers.map((w) => w.getStatus());
      return {
        arrivals: arrivals(),
        cachedWorkflows: p!.numCachedWorkflows + b!.numCachedWorkflows,
        inFlightActivations: p!.numInFlightWorkflowActivations + b!.numInFlightWorkflowActivations,
        inFlightActivities: p!.numInFlightActivities + b!.numInFlightActivities,
        memory: process.memoryUsage(),
        /** In force, the SDK's default when the setting is left out. */
        maxCachedWorkflows: workers[0]!.options.maxCachedWorkflows,
      };
    },
    close: async () => {
      for (const w of workers) w.shutdown();
      await running;
      await connection.close();
      await db.close();
    },
  };
}

export type WorkerHostApi = ReturnType<typeof workerHostApi>;

if (require.main === module) {
  main().catch((error: unknown) => {
    process.stderr.write(`worker host: ${error instanceof Error ? error.stack : String(error)}\n`);
    process.exit(1);
  });
}
