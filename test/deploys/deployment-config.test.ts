import { ConfigError, loadConfig } from '../../src/config';
import {
  buildIdOf,
  deploymentFromConfig,
  workerDeploymentOptions,
} from '../../src/workers/deployment';
import { thrownBy } from '../support/failures';

describe('the build a worker declares', () => {
  it('is the bundle hash under deployment order-payments unless configured, versioned and PINNED', () => {
    const config = loadConfig({});
    const deployment = deploymentFromConfig(config, 'bundle code');
    expect(deployment).toEqual({
      deploymentName: 'order-payments',
      buildId: buildIdOf('bundle code'),
      useWorkerVersioning: true,
    });
    expect(deployment.buildId).toMatch(/^[0-9a-f]{12}$/);
    expect(buildIdOf('bundle code!')).not.toBe(deployment.buildId);
    expect(workerDeploymentOptions(deployment)).toEqual({
      version: { deploymentName: 'order-payments', buildId: deployment.buildId },
      useWorkerVersioning: true,
      defaultVersioningBehavior: 'PINNED',
    });
    expect(config.WORKER_SET_CURRENT).toBe('if-none');
  });

  it('takes WORKER_BUILD_ID and WORKER_DEPLOYMENT_NAME, and polls unversioned with WORKER_VERSIONING=off', () => {
    const config = loadConfig({
      WORKER_BUILD_ID: 'v2-3f2a9c8',
      WORKER_DEPLOYMENT_NAME: 'payments-eu',
      WORKER_VERSIONING: 'off',
    });
    const deployment = deploymentFromConfig(config, 'bundle code');
    expect(deployment).toEqual({
      deploymentName: 'payments-eu',
      buildId: 'v2-3f2a9c8',
      useWorkerVersioning: false,
    });
    expect(workerDeploymentOptions(deployment)).toEqual({
      version: { deploymentName: 'payments-eu', buildId: 'v2-3f2a9c8' },
      useWorkerVersioning: false,
    });
  });

  it('refuses names the server refuses (. and :), with what to fix', () => {
    const { problems } = thrownBy(
      () =>
        loadConfig({
          WORKER_DEPLOYMENT_NAME: 'order.payments',
          WORKER_BUILD_ID: 'order-payments:1',
          WORKER_VERSIONING: 'yes',
          WORKER_SET_CURRENT: 'always',
        }),
      ConfigError,
    );
    expect(problems).toEqual([
      expect.stringMatching(/^WORKER_DEPLOYMENT_NAME: .*refuses \. and :/),
      expect.stringMatching(/^WORKER_BUILD_ID: /),
      expect.stringMatching(/^WORKER_VERSIONING: must be on or off/),
      expect.stringMatching(/^WORKER_SET_CURRENT: must be if-none or never/),
    ]);
  });
});
