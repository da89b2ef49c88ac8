import type { AlertDeliveriesRepository } from '../db/repositories/alert-deliveries';
import type { Logger } from '../logger';
import { postAlert } from './alert-webhook';
import { errorMessage } from './probes';
import { noPollerPayload, recoveryPayload } from './task-queue-alerts';
import {
  describePollers,
  latestPoll,
  pollersOfBuild,
  type TaskQueueConnection,
} from './task-queue-pollers';

/**
 * Temporal silently accepts work for a queue nobody polls. Runs in the HTTP process: a dead
 * worker cannot report itself.
 */
export interface TaskQueueWatchdogOptions {
  connection: TaskQueueConnection;
  namespace: string;
  taskQueues: readonly string[];
  noPollerAlertMs: number;
  checkIntervalMs: number;
  logger: Pick<Logger, 'error' | 'warn' | 'info'>;
  /** Slack-compatible incoming webhook; unset: the log line is the alert. */
  alertWebhookUrl?: string;
  temporalUiUrl?: string;
  now?: () => number;
  requestTimeoutMs?: number;
  /**
   * The current and ramping builds, each judged by its own workers' polls (another build's
   * workers never take its tasks). Undefined or empty (WORKER_VERSIONING=off): any poll counts.
   */
  routedBuilds?: () => Promise<RoutedBuild[] | undefined>;
  /** Delivered alerts' stamps, so a restarted process does not post an outage again. */
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
  start(): void;
  stop(): Promise<void>;
}

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
