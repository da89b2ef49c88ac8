import { createHash } from 'node:crypto';
import type { VersioningBehavior, WorkerDeploymentVersion } from '@temporalio/common';
import type { WorkerOptions } from '@temporalio/worker';
import type { Config } from '../config';

/**
 * Worker Versioning (Worker Deployments): every worker says which build of the workflow code it
 * runs, as a version `<deployment name>:<build ID>`. The server sends a new run to the current
 * version (or to the ramping one, for a share of new runs), and keeps a PINNED run on the
 * version that started it until it closes, so old and new builds run side by side during a
 * rollout and no workflow code has to replay a history written by another build
 * (docs/deploys.md). The payments and heavy workers of one build load one bundle and so share
 * one version: a pinned order's invoice child on `heavy` runs on the order's build.
 */
export interface WorkerDeployment extends WorkerDeploymentVersion {
  /**
   * Off: the worker polls unversioned and takes any task of its queue (a server without Worker
   * Deployments; the time-skipping test server, which has none). The version is still reported.
   */
  useWorkerVersioning: boolean;
}

/**
 * What a workflow does when a newer build becomes current, unless it says otherwise with
 * `setWorkflowOptions`: every workflow here finishes on the build that started it. They all end
 * within hours (the longest wait is the warehouse's 30-minute retry deadline, or an hour of
 * alert delivery), so an old build's workers run a little longer instead of the new code
 * carrying `patched()` branches for the old runs.
 */
export const DEFAULT_VERSIONING_BEHAVIOR: VersioningBehavior = 'PINNED';

/** The build ID of a workflow bundle: the first 12 hex digits of its SHA-256. */
export function buildIdOf(bundleCode: string): string {
  return createHash('sha256').update(bundleCode).digest('hex').slice(0, 12);
}

/**
 * The version a worker with this bundle declares: WORKER_DEPLOYMENT_NAME and WORKER_BUILD_ID,
 * or the bundle's hash, so that two workers with the same code always declare the same build
 * and any change to the code is a new one.
 */
export function deploymentFromConfig(
  config: Pick<Config, 'WORKER_DEPLOYMENT_NAME' | 'WORKER_BUILD_ID' | 'WORKER_VERSIONING'>,
  bundleCode: string,
): WorkerDeployment {
  return {
    deploymentName: config.WORKER_DEPLOYMENT_NAME,
    buildId: config.WORKER_BUILD_ID ?? buildIdOf(bundleCode),
    useWorkerVersioning: config.WORKER_VERSIONING === 'on',
  };
}

/** The WorkerOptions that declare `deployment`. */
export function workerDeploymentOptions(
  deployment: WorkerDeployment,
): NonNullable<WorkerOptions['workerDeploymentOptions']> {
  const version = { deploymentName: deployment.deploymentName, buildId: deployment.buildId };
  return deployment.useWorkerVersioning
    ? { version, useWorkerVersioning: true, defaultVersioningBehavior: DEFAULT_VERSIONING_BEHAVIOR }
    : { version, useWorkerVersioning: false };
}
