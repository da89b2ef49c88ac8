import { type DevServerConfig, TestWorkflowEnvironment } from '@temporalio/testing';
import { devServerExecutable, testServerExecutable } from '../../src/temporal/provision';

/**
 * Temporal environments for tests, on the servers provisioning found: the executables named by
 * TEMPORAL_TEST_SERVER_PATH / TEMPORAL_CLI_PATH (global-setup sets them), otherwise the SDK's
 * download, otherwise the project's own build. Call `teardown()` in afterAll.
 */

/** The time-skipping test server: timers and `env.sleep` jump ahead instead of waiting. */
export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createTimeSkipping({
    server: { executable: await testServerExecutable() },
  });
}

export interface DevServerEnvOptions {
  namespace?: string;
  searchAttributes?: DevServerConfig['searchAttributes'];
  /**
   * Delete closed workflows within seconds instead of ~30 s: the server deletes a run only once
   * it has recorded that its close was processed, which it does every 30 s by default.
   */
  fastDeletion?: boolean;
}

/** A real Temporal dev server, in memory, on a random free port, without Web UI. */
export async function createDevServerEnv(
  options: DevServerEnvOptions = {},
): Promise<TestWorkflowEnvironment> {
  return TestWorkflowEnvironment.createLocal({
    server: {
      executable: await devServerExecutable(),
      namespace: options.namespace,
      searchAttributes: options.searchAttributes,
      extraArgs: options.fastDeletion
        ? ['--dynamic-config-value', 'history.transferProcessorUpdateAckInterval="1s"']
        : [],
    },
  });
}
