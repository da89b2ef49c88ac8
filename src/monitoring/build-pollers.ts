import type { WorkerDeploymentVersion } from '@temporalio/common';
import {
  describePollers,
  isLive,
  latestPoll,
  POLLER_FRESH_MS,
  pollersOfBuild,
  type PollerSighting,
  type TaskQueueConnection,
} from './task-queue-pollers';

export interface BuildQueuePollers {
  taskQueue: string;
  /** Worker identities of this build that polled the queue's workflow tasks recently. */
  workflow: string[];
  /** The same for its activity tasks. */
  activity: string[];
  /** The latest poll of this build on the queue the server remembers (about 5 minutes), live or not. */
  lastPollAt: Date | undefined;
}

export interface BuildPollers {
  buildId: string;
  queues: BuildQueuePollers[];
  /** What lacks a live poller, e.g. `heavy (workflow and activity tasks)`; empty: none. */
  missing: string[];
}

export interface BuildPollerOptions {
  /** Milliseconds since the epoch; tests pass a fake clock. */
  now?: number;
  freshMs?: number;
  timeoutMs?: number;
}

/** Both task types on each queue: a PINNED run's tasks go to no other build's workers. */
export async function describeBuildPollers(
  connection: TaskQueueConnection,
  namespace: string,
  version: WorkerDeploymentVersion,
  taskQueues: readonly string[],
  options: BuildPollerOptions = {},
): Promise<BuildPollers> {
  const now = options.now ?? Date.now();
  const freshMs = options.freshMs ?? POLLER_FRESH_MS;
  const queues = await Promise.all(
    taskQueues.map(async (taskQueue) => {
      const all = await describePollers(
        connection,
        namespace,
        taskQueue,
        options.timeoutMs ?? 5_000,
      );
      const mine = pollersOfBuild(all, version);
      const live = (list: PollerSighting[]) =>
        [...new Set(list.filter((p) => isLive(p, now, freshMs)).map((p) => p.identity))].sort();
      return {
        taskQueue,
        workflow: live(mine.workflow),
        activity: live(mine.activity),
        lastPollAt: latestPoll(mine),
      };
    }),
  );
  return { buildId: version.buildId, queues, missing: queues.flatMap(missingOn) };
}

function missingOn(queue: BuildQueuePollers): string[] {
  const kinds = [
    ...(queue.workflow.length === 0 ? ['workflow'] : []),
    ...(queue.activity.length === 0 ? ['activity'] : []),
  ];
  return kinds.length === 0 ? [] : [`${queue.taskQueue} (${kinds.join(' and ')} tasks)`];
}
