import { taskQueueUiLink } from './alert-webhook';
import type { RoutedBuild, TaskQueueWatchdogOptions } from './task-queue-watchdog';

// What the watchdog posts to the sink: Slack reads `text`, other receivers the `alert` fields.

type AlertOptions = Pick<
  TaskQueueWatchdogOptions,
  'namespace' | 'temporalUiUrl' | 'noPollerAlertMs'
>;

export function noPollerPayload(
  options: AlertOptions,
  taskQueue: string,
  { build, othersPolling }: { build: RoutedBuild | undefined; othersPolling: number },
  lastPollAt: Date | undefined,
  silentMs: number,
) {
  const link = options.temporalUiUrl
    ? taskQueueUiLink(options.temporalUiUrl, options.namespace, taskQueue)
    : null;
  const last = lastPollAt ? `last poll ${lastPollAt.toISOString()}` : 'no poll on record';
  const who = build ? `no worker of the ${build.role} build ${build.buildId}` : 'no worker';
  const text = [
    `:rotating_light: ${who} is polling task queue ${taskQueue} (namespace ${options.namespace}) for ${formatDuration(silentMs)} (${last})`,
    build
      ? `Runs sent to that build wait until one of its workers polls${othersPolling > 0 ? ` (${othersPolling} worker(s) of other builds poll, and take none of them)` : ''}: start its workers, or make a build with workers current (npm run ops -- deployment describe).`
      : 'Workflows and activities on it wait until a worker polls again: check the worker processes.',
    link ? `<${link}|Open the task queue in Temporal Web UI>` : undefined,
  ]
    .filter((line) => line !== undefined)
    .join('\n');
  return {
    text,
    alert: {
      kind: 'task_queue_no_poller',
      namespace: options.namespace,
      task_queue: taskQueue,
      ...(build ? { build_id: build.buildId, build_role: build.role } : {}),
      last_poll_at: lastPollAt?.toISOString() ?? null,
      silent_seconds: Math.round(silentMs / 1000),
      threshold_seconds: Math.round(options.noPollerAlertMs / 1000),
      web_ui_url: link,
    },
  };
}

export function recoveryPayload(
  options: AlertOptions,
  taskQueue: string,
  build: RoutedBuild | undefined,
  lastPollAt: Date,
  downMs: number,
) {
  const by = build ? ` by build ${build.buildId}` : '';
  return {
    text: `:white_check_mark: task queue ${taskQueue} (namespace ${options.namespace}) is polled again${by}, after ${formatDuration(downMs)} without a worker`,
    alert: {
      kind: 'task_queue_poller_recovered',
      namespace: options.namespace,
      task_queue: taskQueue,
      ...(build ? { build_id: build.buildId } : {}),
      last_poll_at: lastPollAt.toISOString(),
      down_seconds: Math.round(downMs / 1000),
    },
  };
}

function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 120) return `${seconds} s`;
  const minutes = Math.round(seconds / 60);
  return minutes < 120 ? `${minutes} min` : `${(minutes / 60).toFixed(1)} h`;
}
