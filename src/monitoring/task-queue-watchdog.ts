import type { Logger } from '../logger';
import { postAlert, taskQueueUiLink } from './alert-webhook';
import { errorMessage } from './probes';
import { describePollers, latestPoll, type TaskQueueConnection } from './task-queue-pollers';

/**
 * Notices that a task queue has lost its workers (the seed's "the worker died and nobody
 * noticed"): Temporal keeps accepting work for a queue nobody polls, and it waits there,
 * silently. Runs in the HTTP process, never in a worker: a dead worker cannot report itself.
 *
 * Every interval it asks Temporal when a worker last polled each queue. Once no poll has been
 * seen for longer than the threshold it logs one structured error and POSTs one alert to the
 * sink, once per outage (the POST is retried on later checks if the sink fails); when polls
 * resume it logs a recovery line, and tells the sink if it had told it about the outage.
 */
export interface TaskQueueWatchdogOptions {
  connection: TaskQueueConnection;
  namespace: string;
  taskQueues: readonly string[];
  /** Alert once no poll has been seen for longer than this. */
  noPollerAlertMs: number;
  /** Between two checks. */
  checkIntervalMs: number;
  logger: Pick<Logger, 'error' | 'warn' | 'info'>;
  /** Slack-compatible incoming webhook; unset: the log line is the alert. */
  alertWebhookUrl?: string;
  /** Base URL of the Temporal Web UI, for a link to the queue's pollers. */
  temporalUiUrl?: string;
  /** Milliseconds since the epoch; tests pass a fake clock. */
  now?: () => number;
  /** Per call to Temporal and to the sink. */
  requestTimeoutMs?: number;
}

export interface TaskQueueWatchdog {
  /** One round of checks (what the timer runs); for tests and for a first check at start-up. */
  check(): Promise<void>;
  /** Checks every interval until stopped. */
  start(): void;
  /** Stops the timer and waits for a check in progress. */
  stop(): Promise<void>;
}

/** Tries to deliver one alert (or recovery notice) this many times, one try per check. */
const MAX_DELIVERY_ATTEMPTS = 5;

interface Outage {
  /** The last poll before the outage, or when the watchdog first saw no poller at all. */
  since: number;
  lastPollAt: Date | undefined;
  alert: PendingDelivery;
}

interface PendingDelivery {
  body: { text: string; alert: Record<string, unknown> };
  idempotencyKey: string;
  delivered: boolean;
  attempts: number;
}

interface QueueState {
  /** First check that found no poll at all remembered by the server. */
  noPollerSeenSince?: number;
  outage?: Outage;
  recovery?: PendingDelivery;
}

export function createTaskQueueWatchdog(options: TaskQueueWatchdogOptions): TaskQueueWatchdog {
  const now = options.now ?? Date.now;
  const timeoutMs = options.requestTimeoutMs ?? 5_000;
  const { logger, namespace } = options;
  const states = new Map<string, QueueState>(options.taskQueues.map((q) => [q, {}]));
  let unreachable = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  const deliver = async (taskQueue: string, pending: PendingDelivery | undefined) => {
    if (!options.alertWebhookUrl || !pending || pending.delivered) return;
    if (pending.attempts >= MAX_DELIVERY_ATTEMPTS) return;
    pending.attempts += 1;
    try {
      await postAlert(options.alertWebhookUrl, pending.body, {
        idempotencyKey: pending.idempotencyKey,
        timeoutMs,
      });
      pending.delivered = true;
    } catch (error) {
      logger.warn(
        { taskQueue, attempt: pending.attempts, err: errorMessage(error) },
        pending.attempts >= MAX_DELIVERY_ATTEMPTS
          ? 'task queue watchdog: could not deliver the alert; giving up (it is in the log)'
          : 'task queue watchdog: could not deliver the alert; trying again at the next check',
      );
    }
  };

  const checkQueue = async (taskQueue: string, state: QueueState) => {
    const pollers = await describePollers(options.connection, namespace, taskQueue, timeoutMs);
    const lastPollAt = latestPoll(pollers);
    const at = now();
    const fresh = lastPollAt !== undefined && at - lastPollAt.getTime() <= options.noPollerAlertMs;

    if (fresh) {
      state.noPollerSeenSince = undefined;
      const outage = state.outage;
      if (outage) {
        state.outage = undefined;
        const downMs = lastPollAt.getTime() - outage.since;
        logger.info(
          {
            alert: 'task_queue_poller_recovered',
            namespace,
            taskQueue,
            lastPollAt,
            downSeconds: Math.round(downMs / 1000),
          },
          `task queue ${taskQueue} is polled again: a worker is back`,
        );
        // Tell the sink only about outages it was told about.
        state.recovery = outage.alert.delivered
          ? {
              body: recoveryPayload(options, taskQueue, lastPollAt, downMs),
              idempotencyKey: `${outage.alert.idempotencyKey}-recovered`,
              delivered: false,
              attempts: 0,
            }
          : undefined;
      }
      await deliver(taskQueue, state.recovery);
      return;
    }

    if (lastPollAt === undefined) state.noPollerSeenSince ??= at;
    if (!state.outage) {
      const since = lastPollAt?.getTime() ?? state.noPollerSeenSince ?? at;
      if (at - since <= options.noPollerAlertMs) return;
      const silentSeconds = Math.round((at - since) / 1000);
      state.recovery = undefined;
      state.outage = {
        since,
        lastPollAt,
        alert: {
          body: noPollerPayload(options, taskQueue, lastPollAt, at - since),
          idempotencyKey: `task-queue-no-poller-${namespace}-${taskQueue}-${new Date(since).toISOString()}`,
          delivered: false,
          attempts: 0,
        },
      };
      logger.error(
        {
          alert: 'task_queue_no_poller',
          namespace,
          taskQueue,
          lastPollAt: lastPollAt ?? null,
          silentSeconds,
          thresholdSeconds: Math.round(options.noPollerAlertMs / 1000),
        },
        `no worker has polled task queue ${taskQueue} for ${silentSeconds} s: its work waits until one does`,
      );
    }
    await deliver(taskQueue, state.outage.alert);
  };

  const checkAll = async () => {
    try {
      for (const [taskQueue, state] of states) await checkQueue(taskQueue, state);
      if (unreachable) logger.info('task queue watchdog: Temporal answers again');
      unreachable = false;
    } catch (error) {
      // Temporal itself is out of reach: /readyz reports that; pollers cannot be judged now.
      if (!unreachable) {
        logger.warn(
          { err: errorMessage(error) },
          'task queue watchdog: cannot ask Temporal about the task queues; will keep trying',
        );
      }
      unreachable = true;
    }
  };

  const check = () => (running ??= checkAll().finally(() => (running = undefined)));

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(() => {
      void check().finally(schedule);
    }, options.checkIntervalMs);
    // The watchdog never keeps a process alive that is otherwise done.
    timer.unref();
  };

  return {
    check,
    start() {
      if (timer || stopped) return;
      void check().finally(schedule);
    },
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
    },
  };
}

function noPollerPayload(
  options: TaskQueueWatchdogOptions,
  taskQueue: string,
  lastPollAt: Date | undefined,
  silentMs: number,
) {
  const link = options.temporalUiUrl
    ? taskQueueUiLink(options.temporalUiUrl, options.namespace, taskQueue)
    : null;
  const last = lastPollAt ? `last poll ${lastPollAt.toISOString()}` : 'no poll on record';
  const text = [
    `:rotating_light: no worker is polling task queue ${taskQueue} (namespace ${options.namespace}) for ${formatDuration(silentMs)} (${last})`,
    'Workflows and activities on it wait until a worker polls again: check the worker processes.',
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
      last_poll_at: lastPollAt?.toISOString() ?? null,
      silent_seconds: Math.round(silentMs / 1000),
      threshold_seconds: Math.round(options.noPollerAlertMs / 1000),
      web_ui_url: link,
    },
  };
}

function recoveryPayload(
  options: TaskQueueWatchdogOptions,
  taskQueue: string,
  lastPollAt: Date,
  downMs: number,
) {
  return {
    text: `:white_check_mark: task queue ${taskQueue} (namespace ${options.namespace}) is polled again, after ${formatDuration(downMs)} without a worker`,
    alert: {
      kind: 'task_queue_poller_recovered',
      namespace: options.namespace,
      task_queue: taskQueue,
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
