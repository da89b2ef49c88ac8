import type { Client } from '@temporalio/client';
import type { Config } from '../config';
import type { Logger } from '../logger';
import { HEAVY_TASK_QUEUE, PAYMENTS_TASK_QUEUE } from '../shared/constants';
import { createTaskQueueWatchdog, type TaskQueueWatchdog } from './task-queue-watchdog';

export { createTaskQueueWatchdog, type TaskQueueWatchdog } from './task-queue-watchdog';
export { startWorkerHealthServer, type WorkerHealthServer } from './worker-health';

/** Every task queue this system needs a worker on: the doctor and the watchdog check each. */
export const WATCHED_TASK_QUEUES: readonly string[] = [PAYMENTS_TASK_QUEUE, HEAVY_TASK_QUEUE];

/**
 * The no-poller watchdog as configured, started; undefined when TASK_QUEUE_NO_POLLER_ALERT_SECONDS
 * is 0. Stop it before closing the client.
 */
export function startWatchdogFromConfig(
  config: Pick<
    Config,
    | 'TEMPORAL_NAMESPACE'
    | 'TASK_QUEUE_NO_POLLER_ALERT_SECONDS'
    | 'TASK_QUEUE_WATCHDOG_INTERVAL_SECONDS'
    | 'ALERT_WEBHOOK_URL'
  >,
  client: Pick<Client, 'connection'>,
  logger: Logger,
  temporalUiUrl: string | undefined,
): TaskQueueWatchdog | undefined {
  if (config.TASK_QUEUE_NO_POLLER_ALERT_SECONDS === 0) return undefined;
  const watchdog = createTaskQueueWatchdog({
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
