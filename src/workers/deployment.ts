import { createHash } from 'node:crypto';
import type { VersioningBehavior, WorkerDeploymentVersion } from '@temporalio/common';
import type { WorkerOptions } from '@temporalio/worker';
import type { Config } from '../config';

/**
 * Every worker declares its build as `<deployment name>:<build ID>`; the server keeps a PINNED
 * run on the build that started it (docs/deploys.md). The payments and heavy workers of one build
 * share one bundle and one version, so a pinned order's invoice child runs on the order's build.
 */
export interface WorkerDeployment extends WorkerDeploymentVersion {
  /** Off: unversioned, takes any task (servers without Worker Deployments, the test server). */
  useWorkerVersioning: boolean;
}

/** Every workflow here ends within hours: old builds drain instead of `patched()` branches. */
export const DEFAULT_VERSIONING_BEHAVIOR: VersioningBehavior = 'PINNED';

/** The build ID of a workflow bundle: the first 12 hex digits of its SHA-256. */
export function buildIdOf(bundleCode: string): string {
  return createHash('sha256').update(bundleCode).digest('hex').slice(0, 12);
}

/** WORKER_DEPLOYMENT_NAME and WORKER_BUILD_ID, or the bundle's hash: same code, same build. */
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

export function workerDeploymentOptions(
  deployment: WorkerDeployment,
): NonNullable<WorkerOptions['workerDeploymentOptions']> {
  const version = { deploymentName: deployment.deploymentName, buildId: deployment.buildId };
  return deployment.useWorkerVersioning
    ? { version, useWorkerVersioning: true, defaultVersioningBehavior: DEFAULT_VERSIONING_BEHAVIOR }
    : { version, useWorkerVersioning: false };
}
