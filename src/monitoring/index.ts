import type { Client } from '@temporalio/client';
import type { Kysely } from 'kysely';
import type { Database } from '../db';
import { createAlertDeliveriesRepository } from '../db/repositories/alert-deliveries';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { HEAVY_TASK_QUEUE, PAYMENTS_TASK_QUEUE } from '../shared/constants';
import { describeDeployment } from '../temporal/deployments';
import {
  createTaskQueueWatchdog,
  type RoutedBuild,
  type TaskQueueWatchdog,
} from './task-queue-watchdog';

export {
  createTaskQueueWatchdog,
  type RoutedBuild,
  type TaskQueueWatchdog,
} from './task-queue-watchdog';
export { startWorkerHealthServer, type WorkerHealthServer } from './worker-health';

/** Every task queue this system needs a worker on: the doctor and the watchdog check each. */
export const WATCHED_TASK_QUEUES: readonly string[] = [PAYMENTS_TASK_QUEUE, HEAVY_TASK_QUEUE];

/** Undefined when TASK_QUEUE_NO_POLLER_ALERT_SECONDS is 0. Stop it before closing the client. */
export function startWatchdogFromConfig(
  config: Pick<
    Config,
    | 'TEMPORAL_NAMESPACE'
    | 'TASK_QUEUE_NO_POLLER_ALERT_SECONDS'
    | 'TASK_QUEUE_WATCHDOG_INTERVAL_SECONDS'
    | 'ALERT_WEBHOOK_URL'
    | 'WORKER_VERSIONING'
    | 'WORKER_DEPLOYMENT_NAME'
  >,
  client: Client,
  logger: Logger,
  temporalUiUrl: string | undefined,
  db?: Kysely<Database>,
): TaskQueueWatchdog | undefined {
  if (config.TASK_QUEUE_NO_POLLER_ALERT_SECONDS === 0) return undefined;
  const watchdog = createTaskQueueWatchdog({
    routedBuilds:
      config.WORKER_VERSIONING === 'on'
        ? () => routedBuilds(client, config.WORKER_DEPLOYMENT_NAME)
        : undefined,
    deliveries: db ? createAlertDeliveriesRepository(db) : undefined,
    connection: client.connection,
    namespace: config.TEMPORAL_NAMESPACE,
    taskQueues: WATCHED_TASK_QUEUES,
    noPollerAlertMs: config.TASK_QUEUE_NO_POLLER_ALERT_SECONDS * 1000,
    checkIntervalMs: config.TASK_QUEUE_WATCHDOG_INTERVAL_SECONDS * 1000,
    logger: logger.child({ component: 'task-queue-watchdog' }),
    alertWebhookUrl: config.ALERT_WEBHOOK_URL,
    temporalUiUrl,
  });
  watchdog.start();
  return watchdog;
}

export async function routedBuilds(
  client: Client,
  deploymentName: string,
): Promise<RoutedBuild[] | undefined> {
  const state = await describeDeployment(client, deploymentName);
  if (!state) return undefined;
  const builds: RoutedBuild[] = [];
  if (state.current) {
    builds.push({
      role: 'current',
      deploymentName,
      buildId: state.current,
      since: state.currentSince,
    });
  }
  if (state.ramping) {
    builds.push({ role: 'ramping', deploymentName, ...state.ramping });
  }
  return builds;
}
