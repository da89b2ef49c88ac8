import { Client } from '@temporalio/client';
import type { NativeConnection, Worker, WorkerOptions } from '@temporalio/worker';
import type { Config } from '../config';
import type { DatabaseHandle } from '../db';
import type { Logger } from '../logger';
import { HEAVY_TASK_QUEUE, PAYMENTS_TASK_QUEUE } from '../shared/constants';
import { dataConverterFor } from '../codec/data-converter';
import {
  describeDeployment,
  makeCurrentIfNone,
  openRunsOn,
  setCurrentBuild,
  versionString,
  waitForBuild,
} from '../temporal/deployments';
import type { WorkerDeployment } from './deployment';
import { createHeavyWorker, heavyActivityDepsFromConfig } from './heavy';
import { activityDepsFromConfig, createPaymentWorker } from './payments';
import { loadVersionedWorkflowCode } from './workflow-bundle';

export type WorkerQueue = 'payments' | 'heavy';

/**
 * When the build becomes current (docs/deploys.md): `always` before taking work (npm start),
 * `if-none` once polled if the deployment has none, `never`: the operator decides.
 */
export type CurrentBuildPolicy = 'always' | 'if-none' | 'never';

export interface WorkerRuntimeOptions {
  config: Config;
  logger: Logger;
  connection: NativeConnection;
  db: DatabaseHandle;
  queues: readonly WorkerQueue[];
  currentBuild: CurrentBuildPolicy;
  /** Extra Worker options for every worker (the benchmarks' timing interceptors, cache size). */
  overrides?: Partial<WorkerOptions>;
  /** Partners this process started itself (the dev stack); unset: configuration's URLs. */
  partners?: { warehouseUrl: string; smtpUrl: string; temporalUiUrl?: string };
}

export interface WorkerRuntime {
  deployment: WorkerDeployment;
  origin: string;
  workers: Worker[];
  /** Settles when the first queue's worker stops; a failure of another is only logged. */
  done: Promise<void>;
  stop: () => Promise<void>;
  /** `if-none`: the workers run meanwhile; a failure is logged (the operator decides). */
  current: Promise<void>;
}

/**
 * Every process's workers are decided here: one bundle loaded once (every queue declares the
 * same build), the workers on the given connection, the build made current by policy.
 */
export async function startWorkerRuntime(options: WorkerRuntimeOptions): Promise<WorkerRuntime> {
  const { config, logger, connection, db } = options;
  const code = await loadVersionedWorkflowCode(config);
  const common = {
    connection,
    namespace: config.TEMPORAL_NAMESPACE,
    dataConverter: dataConverterFor(config.PAYLOAD_ENCRYPTION_KEY),
    workflowCode: code.code,
    deployment: code.deployment,
    overrides: options.overrides,
  };
  const temporalUiUrl = options.partners?.temporalUiUrl ?? config.TEMPORAL_UI_URL;
  const create: Record<WorkerQueue, () => Promise<Worker>> = {
    payments: () =>
      createPaymentWorker({
        ...common,
        activities: activityDepsFromConfig(config, db, {
          warehouseUrl: options.partners?.warehouseUrl ?? required(config.WAREHOUSE_API_URL),
          smtpUrl: options.partners?.smtpUrl ?? required(config.SMTP_URL),
          temporalUiUrl,
        }),
        maxConcurrentActivities: config.WORKER_MAX_CONCURRENT_ACTIVITIES,
        maxConcurrentWorkflowTasks: config.WORKER_MAX_CONCURRENT_WORKFLOW_TASKS,
      }),
    heavy: () =>
      createHeavyWorker({
        ...common,
        activities: heavyActivityDepsFromConfig(config, db, { temporalUiUrl }),
        maxConcurrentActivities: config.HEAVY_WORKER_MAX_CONCURRENT_ACTIVITIES,
      }),
  };
  const workers: Worker[] = [];
  const runs: Promise<void>[] = [];
  const stop = async () => {
    for (const worker of workers) if (worker.getState() === 'RUNNING') worker.shutdown();
    await Promise.allSettled(runs);
  };
  try {
    for (const queue of options.queues) {
      const worker = await create[queue]();
      workers.push(worker);
      const run = worker.run();
      runs.push(run);
      logger.info(
        {
          taskQueue: queue === 'payments' ? PAYMENTS_TASK_QUEUE : HEAVY_TASK_QUEUE,
          namespace: config.TEMPORAL_NAMESPACE,
          workflowBundle: code.origin,
          version: versionString(code.deployment),
          versioning: config.WORKER_VERSIONING,
        },
        `${queue} worker started`,
      );
      if (runs.length > 1) {
        // A heavy worker that dies leaves payments running; its work waits for the next start.
        run.catch((err: unknown) => logger.error({ err, taskQueue: queue }, 'worker stopped'));
      }
    }
    const current = claimCurrentBuild(options, code.deployment);
    if (options.currentBuild === 'always') await current;
    return {
      deployment: code.deployment,
      origin: code.origin,
      workers,
      done: runs[0]!,
      stop,
      current,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

function required(url: string | undefined): string {
  // loadConfig and the worker entry check these first; this only keeps the types honest.
  if (!url) throw new Error('WAREHOUSE_API_URL and SMTP_URL are needed to run the payments worker');
  return url;
}

async function claimCurrentBuild(
  { config, connection, logger, currentBuild }: WorkerRuntimeOptions,
  deployment: WorkerDeployment,
): Promise<void> {
  if (!deployment.useWorkerVersioning || currentBuild === 'never') return;
  const client = new Client({ connection, namespace: config.TEMPORAL_NAMESPACE });
  const version = versionString(deployment);
  if (currentBuild === 'if-none') {
    return makeCurrentIfNone(client, deployment, `worker ${version}`).then(
      (outcome) => logger.info({ version, outcome }, 'worker deployment: current build'),
      (err: unknown) =>
        logger.warn(
          { version, err },
          'worker deployment: could not read or set the current build; set it with npm run ops -- deployment current',
        ),
    );
  }
  // `always`: before the process's webhook takes payments, so new runs go to this build.
  await waitForBuild(client, deployment);
  const before = await describeDeployment(client, deployment.deploymentName);
  if (before?.current !== deployment.buildId) {
    await setCurrentBuild(client, deployment, { identity: 'npm start' });
  }
  logger.info({ version }, 'worker deployment: this build is current');
  // Runs pinned to an earlier build whose code is gone (a restart after an edit, with ./data
  // kept) have no worker here any more: say so.
  for (const build of before?.builds ?? []) {
    if (build.buildId === deployment.buildId) continue;
    const open = await openRunsOn(client, { ...deployment, buildId: build.buildId });
    if (open > 0) {
      logger.warn(
        { buildId: build.buildId, openRuns: open },
        'runs pinned to an earlier build stay open: no worker of that build runs here (see docs/deploys.md, "In development")',
      );
    }
  }
}
