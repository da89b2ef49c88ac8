import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';

const { TaskQueueType, WorkerVersioningMode } = temporal.api.enums.v1;

/**
 * Every call runs under a gRPC deadline: without one, a call to a down server retries for 20 s,
 * and closing the connection meanwhile crashes the process from the retry's timer.
 */
export interface TaskQueueConnection {
  withDeadline: Connection['withDeadline'];
  workflowService: {
    describeTaskQueue(
      request: temporal.api.workflowservice.v1.IDescribeTaskQueueRequest,
    ): Promise<temporal.api.workflowservice.v1.IDescribeTaskQueueResponse>;
  };
}

export interface PollerSighting {
  /** The SDK's default identity is `<pid>@<host>`. */
  identity: string;
  lastPollAt: Date | undefined;
  /** The build a versioned worker declared (`WORKER_DEPLOYMENT_NAME` and build ID); none: unversioned. */
  build: { deploymentName: string; buildId: string } | undefined;
}

export interface TaskQueuePollers {
  workflow: PollerSighting[];
  activity: PollerSighting[];
}

export interface TaskQueueBacklog {
  /** Tasks waiting for a worker, workflow and activity tasks together (approximate). */
  count: number;
  /** How long the oldest has waited, in ms (approximate); 0 when none waits. */
  oldestMs: number;
}

/**
 * How long after its last poll a worker still counts as polling. A worker holds a long poll open
 * for up to a minute and the server records only the poll's start, so an idle, healthy worker
 * looks a minute old; a dead one stays listed (with its old time) for about five minutes.
 */
export const POLLER_FRESH_MS = 2 * 60_000;

export async function describePollers(
  connection: TaskQueueConnection,
  namespace: string,
  taskQueue: string,
  timeoutMs: number,
): Promise<TaskQueuePollers> {
  const deadline = Date.now() + timeoutMs;
  const [workflow, activity] = await Promise.all(
    [TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY].map(
      async (taskQueueType) => {
        const response = await connection.withDeadline(deadline, () =>
          connection.workflowService.describeTaskQueue({
            namespace,
            taskQueue: { name: taskQueue },
            taskQueueType,
          }),
        );
        return (response.pollers ?? []).map((p) => ({
          identity: p.identity ?? '(unnamed)',
          lastPollAt: timestampToDate(p.lastAccessTime),
          build: versionedBuildOf(p.deploymentOptions),
        }));
      },
    ),
  );
  return { workflow: workflow ?? [], activity: activity ?? [] };
}

/** The backlog of a queue from the server's task queue stats (Temporal 1.25+). */
export async function describeBacklog(
  connection: TaskQueueConnection,
  namespace: string,
  taskQueue: string,
  timeoutMs: number,
): Promise<TaskQueueBacklog | undefined> {
  const deadline = Date.now() + timeoutMs;
  const stats = await Promise.all(
    [TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY].map(
      async (taskQueueType) =>
        (
          await connection.withDeadline(deadline, () =>
            connection.workflowService.describeTaskQueue({
              namespace,
              taskQueue: { name: taskQueue },
              taskQueueType,
              reportStats: true,
            }),
          )
        ).stats,
    ),
  );
  if (stats.some((s) => !s)) return undefined;
  return {
    count: stats.reduce((sum, s) => sum + Number(s?.approximateBacklogCount ?? 0), 0),
    oldestMs: Math.max(...stats.map((s) => durationToMs(s?.approximateBacklogAge))),
  };
}

/**
 * A PINNED run's tasks go only to its build's workers, new runs only to the current or ramping
 * build's: another build's poller is no help (a rollback to a stopped build strands new runs).
 */
export function pollersOfBuild(
  pollers: TaskQueuePollers,
  build: { deploymentName: string; buildId: string },
): TaskQueuePollers {
  const mine = (p: PollerSighting) =>
    p.build?.deploymentName === build.deploymentName && p.build.buildId === build.buildId;
  return { workflow: pollers.workflow.filter(mine), activity: pollers.activity.filter(mine) };
}

export function isLive(p: PollerSighting, now: number, freshMs = POLLER_FRESH_MS): boolean {
  return p.lastPollAt !== undefined && now - p.lastPollAt.getTime() <= freshMs;
}

export function latestPoll(pollers: TaskQueuePollers): Date | undefined {
  let latest: Date | undefined;
  for (const p of [...pollers.workflow, ...pollers.activity]) {
    if (p.lastPollAt && (!latest || p.lastPollAt > latest)) latest = p.lastPollAt;
  }
  return latest;
}

function versionedBuildOf(
  options: temporal.api.deployment.v1.IWorkerDeploymentOptions | null | undefined,
): PollerSighting['build'] {
  const versioned =
    options?.workerVersioningMode === WorkerVersioningMode.WORKER_VERSIONING_MODE_VERSIONED;
  if (!versioned || !options?.deploymentName || !options.buildId) return undefined;
  return { deploymentName: options.deploymentName, buildId: options.buildId };
}

type ProtoTimestamp = { seconds?: { toString(): string } | number | null; nanos?: number | null };

export function timestampToDate(ts: ProtoTimestamp | null | undefined): Date | undefined {
  if (!ts || ts.seconds === null || ts.seconds === undefined) return undefined;
  return new Date(Number(ts.seconds.toString()) * 1000 + Math.floor((ts.nanos ?? 0) / 1e6));
}

function durationToMs(d: ProtoTimestamp | null | undefined): number {
  if (!d) return 0;
  return Number(d.seconds?.toString() ?? 0) * 1000 + Math.round((d.nanos ?? 0) / 1e6);
}
