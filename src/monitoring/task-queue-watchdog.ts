import type { AlertDeliveriesRepository } from '../db/repositories/alert-deliveries';
import type { Logger } from '../logger';
import { postAlert, taskQueueUiLink } from './alert-webhook';
import { errorMessage } from './probes';
import {
  describePollers,
  latestPoll,
  pollersOfBuild,
  type TaskQueueConnection,
} from './task-queue-pollers';

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
  /**
   * The builds that get new runs (Worker Versioning): the current one and the ramping one, each
   * judged by its own workers' polls, since another build's workers never take its tasks.
   * Undefined, or an empty answer (no deployment yet, WORKER_VERSIONING=off): any poll counts.
   */
  routedBuilds?: () => Promise<RoutedBuild[] | undefined>;
  /**
   * Where delivered alerts are stamped by Idempotency-Key (the alert_deliveries table), so a
   * restarted HTTP process does not post an outage the sink already has. Without it: memory only.
   */
  deliveries?: Pick<AlertDeliveriesRepository, 'wasDelivered' | 'markDelivered'>;
}

/** A build new runs go to, and since when (the server's routing change time). */
export interface RoutedBuild {
  role: 'current' | 'ramping';
  deploymentName: string;
  buildId: string;
  since: Date | undefined;
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
  // One state per queue, and per routed build on it: a rollback opens an outage of its own.
  const states = new Map<string, QueueState>();
  const stateOf = (taskQueue: string, build: RoutedBuild | undefined) => {
    const key = build ? `${taskQueue}\u0000${build.buildId}` : taskQueue;
    let state = states.get(key);
    if (!state) states.set(key, (state = {}));
    return state;
  };
  let unreachable = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  const deliver = async (taskQueue: string, pending: PendingDelivery | undefined) => {
    if (!options.alertWebhookUrl || !pending || pending.delivered) return;
    if (pending.attempts >= MAX_DELIVERY_ATTEMPTS) return;
    pending.attempts += 1;
    try {
      // Posted before this process started (the same outage has the same key): not again.
      if (await options.deliveries?.wasDelivered(pending.idempotencyKey)) {
        pending.delivered = true;
        return;
      }
      await postAlert(options.alertWebhookUrl, pending.body, {
        idempotencyKey: pending.idempotencyKey,
        timeoutMs,
      });
      pending.delivered = true;
      await options.deliveries?.markDelivered(pending.idempotencyKey);
    } catch (error) {
      logger.warn(
        { taskQueue, attempt: pending.attempts, err: errorMessage(error) },
        pending.attempts >= MAX_DELIVERY_ATTEMPTS
          ? 'task queue watchdog: could not deliver the alert; giving up (it is in the log)'
          : 'task queue watchdog: could not deliver the alert; trying again at the next check',
      );
    }
  };

  const checkQueue = async (taskQueue: string, routed: RoutedBuild[] | undefined) => {
    const all = await describePollers(options.connection, namespace, taskQueue, timeoutMs);
    if (!routed || routed.length === 0) return judge(taskQueue, undefined, latestPoll(all), 0);
    for (const build of routed) {
      const others = [...all.workflow, ...all.activity].filter(
        (p) =>
          p.build?.buildId !== build.buildId &&
          p.lastPollAt !== undefined &&
          now() - p.lastPollAt.getTime() <= options.noPollerAlertMs,
      );
      const othersPolling = new Set(others.map((p) => p.identity)).size;
      await judge(taskQueue, build, latestPoll(pollersOfBuild(all, build)), othersPolling);
    }
  };

  const judge = async (
    taskQueue: string,
    build: RoutedBuild | undefined,
    lastPollAt: Date | undefined,
    othersPolling: number,
  ) => {
    const state = stateOf(taskQueue, build);
    const at = now();
    const buildFields = build ? { buildId: build.buildId, buildRole: build.role } : {};
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
            ...buildFields,
            lastPollAt,
            downSeconds: Math.round(downMs / 1000),
          },
          `task queue ${taskQueue} is polled again${build ? ` by build ${build.buildId}` : ''}: a worker is back`,
        );
        // Tell the sink only about outages it was told about.
        state.recovery = outage.alert.delivered
          ? {
              body: recoveryPayload(options, taskQueue, build, lastPollAt, downMs),
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
      // Taken from the server (a poll, a routing change) where it can be, so that a restarted
      // watchdog names the same outage with the same key.
      const since =
        lastPollAt?.getTime() ?? build?.since?.getTime() ?? state.noPollerSeenSince ?? at;
      // A routed build none of whose workers the server lists, while other builds' workers poll
      // (so the list is not empty for a server restart): no idle worker of it can be waiting out
      // its long poll. Its runs are stranded now, not after the threshold.
      const stranded = build !== undefined && lastPollAt === undefined && othersPolling > 0;
      if (!stranded && at - since <= options.noPollerAlertMs) return;
      const silentSeconds = Math.round((at - since) / 1000);
      const buildKey = build ? `-${build.buildId}` : '';
      state.recovery = undefined;
      state.outage = {
        since,
        lastPollAt,
        alert: {
          body: noPollerPayload(
            options,
            taskQueue,
            { build, othersPolling },
            lastPollAt,
            at - since,
          ),
          idempotencyKey: `task-queue-no-poller-${namespace}-${taskQueue}${buildKey}-${new Date(since).toISOString()}`,
          delivered: false,
          attempts: 0,
        },
      };
      logger.error(
        {
          alert: 'task_queue_no_poller',
          namespace,
          taskQueue,
          ...buildFields,
          ...(build ? { otherBuildsPolling: othersPolling } : {}),
          lastPollAt: lastPollAt ?? null,
          silentSeconds,
          thresholdSeconds: Math.round(options.noPollerAlertMs / 1000),
        },
        build
          ? `no worker of the ${build.role} build ${build.buildId} has polled task queue ${taskQueue} for ${silentSeconds} s: the runs sent to it wait until one does`
          : `no worker has polled task queue ${taskQueue} for ${silentSeconds} s: its work waits until one does`,
      );
    }
    await deliver(taskQueue, state.outage.alert);
  };

  const checkAll = async () => {
    try {
      const routed = await options.routedBuilds?.();
      for (const taskQueue of options.taskQueues) await checkQueue(taskQueue, routed);
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

function recoveryPayload(
  options: TaskQueueWatchdogOptions,
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
