import type { Client } from '@temporalio/client';
import type { WorkerDeploymentVersion } from '@temporalio/common';
import { optionalTsToDate } from '@temporalio/common/lib/time';
import { temporal } from '@temporalio/proto';
import { grpcCode } from './grpc-status';

// Worker Deployments through raw RPCs: SDK 1.24 has no client for them.

const { VersionDrainageStatus, WorkerDeploymentVersionStatus } = temporal.api.enums.v1;

export interface BuildSummary {
  buildId: string;
  /** CURRENT, RAMPING, DRAINING (no new runs, pinned runs still open), DRAINED, INACTIVE. */
  status: string;
  /** The server's own drainage check (refreshed every few minutes), when it made one. */
  drainage: 'draining' | 'drained' | undefined;
}

export interface DeploymentState {
  deploymentName: string;
  current: string | undefined;
  /** When the current build was made current: the start of a stranded outage, if it has no worker. */
  currentSince: Date | undefined;
  ramping: { buildId: string; percentage: number; since: Date | undefined } | undefined;
  builds: BuildSummary[];
  /** The routing state the answer was read at: a change based on it fails if it moved since. */
  conflictToken: Uint8Array | undefined;
}

export async function describeDeployment(
  client: Client,
  deploymentName: string,
): Promise<DeploymentState | undefined> {
  let answer: temporal.api.workflowservice.v1.IDescribeWorkerDeploymentResponse;
  try {
    answer = await client.workflowService.describeWorkerDeployment({
      namespace: client.options.namespace,
      deploymentName,
    });
  } catch (err) {
    if (grpcCode(err) === 5) return undefined; // NOT_FOUND: no worker of it has polled yet
    throw err;
  }
  const info = answer.workerDeploymentInfo;
  const routing = info?.routingConfig;
  const ramping = routing?.rampingDeploymentVersion?.buildId;
  return {
    deploymentName,
    current: routing?.currentDeploymentVersion?.buildId ?? undefined,
    currentSince: optionalTsToDate(routing?.currentVersionChangedTime),
    ramping: ramping
      ? {
          buildId: ramping,
          percentage: routing?.rampingVersionPercentage ?? 0,
          since: optionalTsToDate(routing?.rampingVersionChangedTime),
        }
      : undefined,
    builds: (info?.versionSummaries ?? []).map((summary) => ({
      buildId: summary.deploymentVersion?.buildId ?? '',
      status: statusName(summary.status),
      drainage: drainageOf(summary.drainageInfo?.status ?? summary.drainageStatus),
    })),
    conflictToken: answer.conflictToken ?? undefined,
  };
}

export interface RoutingChange {
  identity?: string;
  /** Fail instead of overwriting a change made since this token was read. */
  conflictToken?: Uint8Array;
}

export async function setCurrentBuild(
  client: Client,
  version: WorkerDeploymentVersion,
  change: RoutingChange = {},
): Promise<void> {
  await client.workflowService.setWorkerDeploymentCurrentVersion({
    namespace: client.options.namespace,
    deploymentName: version.deploymentName,
    buildId: version.buildId,
    identity: change.identity,
    conflictToken: change.conflictToken,
  });
}

/** `buildId` undefined ends the ramp. */
export async function setRampingBuild(
  client: Client,
  deploymentName: string,
  buildId: string | undefined,
  percentage: number,
  change: RoutingChange = {},
): Promise<void> {
  await client.workflowService.setWorkerDeploymentRampingVersion({
    namespace: client.options.namespace,
    deploymentName,
    buildId: buildId ?? '',
    percentage: buildId ? percentage : 0,
    identity: change.identity,
    conflictToken: change.conflictToken,
  });
}

/** What decides when a build's workers may stop: current within a second, unlike the server's drainage status. */
export async function openRunsOn(
  client: Client,
  version: WorkerDeploymentVersion,
): Promise<number> {
  return (await client.workflow.count(runningOn(version))).count;
}

export interface OpenRun {
  workflowId: string;
  runId: string;
  type: string;
  /** Activity types paused (`temporal activity pause`): nothing runs them until unpaused. */
  pausedActivities: string[];
}

/** How many open runs `openRunsHolding` names at most: a drain is read by a person. */
export const OPEN_RUNS_SHOWN = 20;

/** A paused activity holds its run, and so the build, until someone unpauses, resets or completes it. */
export async function openRunsHolding(
  client: Client,
  version: WorkerDeploymentVersion,
  limit = OPEN_RUNS_SHOWN,
): Promise<OpenRun[]> {
  const runs: OpenRun[] = [];
  for await (const run of client.workflow.list({ query: runningOn(version), pageSize: limit })) {
    const described = await client.workflow.getHandle(run.workflowId, run.runId).describe();
    runs.push({
      workflowId: run.workflowId,
      runId: run.runId,
      type: run.type,
      pausedActivities: (described.raw.pendingActivities ?? [])
        .filter((a) => a.paused)
        .map((a) => a.activityType?.name ?? '?'),
    });
    if (runs.length >= limit) break;
  }
  return runs;
}

/** How the server writes a version in search attributes and its CLI: `<name>:<build ID>`. */
export function versionString(version: WorkerDeploymentVersion): string {
  return `${version.deploymentName}:${version.buildId}`;
}

function runningOn(version: WorkerDeploymentVersion): string {
  return `TemporalWorkerDeploymentVersion = '${versionString(version)}' AND ExecutionStatus = 'Running'`;
}

/** The server can route to a version only once a worker of it has polled. */
export async function waitForBuild(
  client: Client,
  version: WorkerDeploymentVersion,
  timeoutMs = 30_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = await describeDeployment(client, version.deploymentName);
    if (state?.builds.some((b) => b.buildId === version.buildId)) return;
    if (Date.now() > deadline) {
      throw new Error(
        `no worker of ${versionString(version)} has polled within ${timeoutMs / 1000} s`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function statusName(status: number | null | undefined): string {
  const name = WorkerDeploymentVersionStatus[status ?? 0] ?? 'UNSPECIFIED';
  return name.replace('WORKER_DEPLOYMENT_VERSION_STATUS_', '');
}

function drainageOf(status: number | null | undefined): BuildSummary['drainage'] {
  if (status === VersionDrainageStatus.VERSION_DRAINAGE_STATUS_DRAINING) return 'draining';
  if (status === VersionDrainageStatus.VERSION_DRAINAGE_STATUS_DRAINED) return 'drained';
  return undefined;
}

/**
 * WORKER_SET_CURRENT=if-none: the first start on a fresh server takes payments without an
 * operator step; later builds wait for `npm run ops -- deployment current`.
 */
export async function makeCurrentIfNone(
  client: Client,
  version: WorkerDeploymentVersion,
  identity: string,
): Promise<'made current' | 'current already' | `left to the operator (current: ${string})`> {
  await waitForBuild(client, version);
  const state = await describeDeployment(client, version.deploymentName);
  if (state?.current === version.buildId) return 'current already';
  if (state?.current) return `left to the operator (current: ${state.current})`;
  await setCurrentBuild(client, version, { identity, conflictToken: state?.conflictToken });
  return 'made current';
}
