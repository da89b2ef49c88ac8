import path from 'node:path';
import type * as grpc from '@grpc/grpc-js';
import {
  type ConnectionPlugin,
  defaultGrpcRetryOptions,
  makeGrpcRetryInterceptor,
} from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { type DevServerConfig, TestWorkflowEnvironment } from '@temporalio/testing';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../../src/shared/search-attributes';
import { devServerExecutable, testServerExecutable } from './provision';
import { releaseLeakedChildLocks } from './time-skipping-locks';

/**
 * Temporal environments for tests, on the servers provisioning found: the executables named by
 * TEMPORAL_TEST_SERVER_PATH / TEMPORAL_CLI_PATH (global-setup sets them), otherwise the SDK's
 * download, otherwise the project's own build. Call `teardown()` in afterAll: it first ends the
 * client calls still in flight (see `settlingCalls`), then does the SDK's teardown.
 */

/** The time-skipping test server: timers and `env.sleep` jump ahead instead of waiting. */
export async function createTimeSkippingEnv(): Promise<TestWorkflowEnvironment> {
  const executable = await testServerExecutable();
  const env = await patientStart((plugins) =>
    TestWorkflowEnvironment.createTimeSkipping({ server: { executable }, plugins }),
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
  releaseLeakedChildLocks(env);
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
  return patientStart((plugins) =>
    TestWorkflowEnvironment.createLocal({
      plugins,
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
 * Every environment's client connection is built with `settlingCalls`, and its teardown ends
 * those calls before the SDK closes the connection.
 */
async function patientStart(
  start: (plugins: ConnectionPlugin[]) => Promise<TestWorkflowEnvironment>,
): Promise<TestWorkflowEnvironment> {
  for (let attempt = 1; ; attempt += 1) {
    const calls = settlingCalls();
    try {
      const env = await start([calls.plugin]);
      const sdkTeardown = env.teardown.bind(env);
      env.teardown = async () => {
        await calls.settle();
        await sdkTeardown();
      };
      return env;
    } catch (error) {
      if (attempt === 3 || !/did not start within/.test(String(error))) throw error;
    }
  }
}

// The grpc-js that @temporalio/client itself loads (the project does not depend on it directly).
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { InterceptingCall, status: GrpcStatus } = require(
  require.resolve('@grpc/grpc-js', {
    paths: [path.dirname(require.resolve('@temporalio/client'))],
  }),
) as typeof grpc;

/**
 * The SDK's `teardown()` closes the client connection, then stops the server. Closing a grpc-js
 * channel does not end a call already on the wire (a `result()` long poll a timed-out test left
 * behind, say): when the server stops, that call fails with UNAVAILABLE, the SDK's retry
 * interceptor schedules a retry with `setTimeout`, and the retry creates a call on the closed
 * channel: "Channel has been shut down", thrown inside the timer. That uncaught exception fails
 * whichever test file the jest worker runs by then, often the next one, as "Test suite failed to
 * run" (issue 37). So the connection carries two interceptors around the SDK's retry interceptor:
 * one that knows each call until its caller has its status, one that knows each attempt on the
 * wire. `settle()` stops retries, cancels every attempt (CANCELLED is not retried) and waits
 * until every call has settled; only then does the SDK close the connection and stop the server.
 */
function settlingCalls(): { plugin: ConnectionPlugin; settle: () => Promise<void> } {
  let ending = false;
  const unsettled = new Set<Promise<void>>();
  const attempts = new Set<grpc.InterceptingCall>();
  const cancel = (attempt: grpc.InterceptingCall) =>
    attempt.cancelWithStatus(GrpcStatus.CANCELLED, 'the test environment is being torn down');

  // Outermost: from the call's start until the status its caller gets, retries included.
  const untilSettled: grpc.Interceptor = (options, nextCall) =>
    new InterceptingCall(nextCall(options), {
      start(metadata, _listener, next) {
        let settled!: () => void;
        const call = new Promise<void>((resolve) => (settled = resolve));
        unsettled.add(call);
        void call.then(() => unsettled.delete(call));
        next(metadata, {
          onReceiveStatus(status, passOn) {
            settled();
            passOn(status);
          },
        });
      },
    });

  // Innermost: one attempt on the wire; a retry that starts while ending is cancelled at once.
  const onTheWire: grpc.Interceptor = (options, nextCall) => {
    const attempt = new InterceptingCall(nextCall(options), {
      start(metadata, _listener, next) {
        attempts.add(attempt);
        next(metadata, {
          onReceiveStatus(status, passOn) {
            attempts.delete(attempt);
            passOn(status);
          },
        });
        if (ending) cancel(attempt);
      },
    });
    return attempt;
  };

  const retry = defaultGrpcRetryOptions();
  return {
    plugin: {
      name: 'settle-calls-before-close',
      configureConnection: (options) => ({
        ...options,
        interceptors: [
          untilSettled,
          makeGrpcRetryInterceptor({
            delayFunction: retry.delayFunction,
            retryableDecider: (attempt, status) =>
              !ending && retry.retryableDecider(attempt, status),
          }),
          onTheWire,
        ],
      }),
    },
    async settle() {
      ending = true;
      attempts.forEach(cancel);
      // A retry already waiting for its timer starts, and is cancelled, when the timer fires.
      while (unsettled.size > 0) await Promise.all(unsettled);
    },
  };
}
