import { temporal } from '@temporalio/proto';
import { type DevServerConfig, TestWorkflowEnvironment } from '@temporalio/testing';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../../src/shared/search-attributes';
import { devServerExecutable, testServerExecutable } from './provision';

/**
 * Temporal environments for tests, on the servers provisioning found: the executables named by
 * TEMPORAL_TEST_SERVER_PATH / TEMPORAL_CLI_PATH (global-setup sets them), otherwise the SDK's
 * download, otherwise the project's own build. Call `teardown()` in afterAll.
 */

/** The time-skipping test server: timers and `env.sleep` jump ahead instead of waiting. */
export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const executable = await testServerExecutable();
  const env = await patientStart(() =>
    TestWorkflowEnvironment.createTimeSkipping({ server: { executable } }),
  );
  // The order workflow upserts OrderId, and the Java test server, like any server, refuses a
  // search attribute it does not know (the workflow task would fail and retry until timeout).
  // The SDK has no option for it here, but the server takes them over the operator API.
  try {
    await env.connection.operatorService.addSearchAttributes({
      namespace: env.namespace ?? 'default',
      searchAttributes: Object.fromEntries(
        CUSTOM_SEARCH_ATTRIBUTES.map(({ name, type }) => [
          name,
          temporal.api.enums.v1.IndexedValueType[`INDEXED_VALUE_TYPE_${type}`],
        ]),
      ),
    });
  } catch (error) {
    await env.teardown();
    throw error;
  }
  return env;
}

export interface DevServerEnvOptions {
  namespace?: string;
  /** Default: the app's custom search attributes, which its workflows set and need registered. */
  searchAttributes?: DevServerConfig['searchAttributes'];
  /**
   * Delete closed workflows within seconds instead of ~30 s: the server deletes a run only once
   * it has recorded that its close was processed, which it does every 30 s by default.
   */
  fastDeletion?: boolean;
  /** gRPC port (default: a free one). */
  port?: number;
  /**
   * Suggest continue-as-new to a run once its history has this many events (the server's
   * default is 4,096), so a test reaches a run boundary in a few steps.
   */
  suggestContinueAsNewAfterEvents?: number;
  /**
   * How long the server holds an idle worker's poll (default 60 s). Shorter, an idle worker's
   * last poll is never older than this, so a test can tell a stopped worker in seconds.
   */
  longPollSeconds?: number;
}

/** A real Temporal dev server, in memory, on a random free port, without Web UI. */
export async function createDevServerEnv(
  options: DevServerEnvOptions = {},
): Promise<TestWorkflowEnvironment> {
  const executable = await devServerExecutable();
  return patientStart(() =>
    TestWorkflowEnvironment.createLocal({
      server: {
        executable,
        namespace: options.namespace,
        port: options.port,
        searchAttributes: options.searchAttributes ?? [...CUSTOM_SEARCH_ATTRIBUTES],
        extraArgs: [
          ...(options.fastDeletion
            ? ['--dynamic-config-value', 'history.transferProcessorUpdateAckInterval="1s"']
            : []),
          ...(options.suggestContinueAsNewAfterEvents
            ? [
                '--dynamic-config-value',
                `limit.historyCount.suggestContinueAsNew=${options.suggestContinueAsNewAfterEvents}`,
              ]
            : []),
          ...(options.longPollSeconds
            ? [
                '--dynamic-config-value',
                `matching.longPollExpirationInterval="${options.longPollSeconds}s"`,
              ]
            : []),
        ],
      },
    }),
  );
}

/**
 * The SDK gives a server it starts 5 s to answer, a fixed limit. On a loaded machine (two cores,
 * a mutation run beside the suite) a JVM or a Go binary can miss it without anything being
 * wrong; the start is tried again, twice at most. Any other failure is the test's.
 */
async function patientStart(
  start: () => Promise<TestWorkflowEnvironment>,
): Promise<TestWorkflowEnvironment> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await start();
    } catch (error) {
      if (attempt === 3 || !/did not start within/.test(String(error))) throw error;
    }
  }
}
