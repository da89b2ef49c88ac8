import { MockActivityEnvironment } from '@temporalio/testing';
import { Runtime } from '@temporalio/worker';

/**
 * An activity context outside any workflow, logging to the test run's SDK log
 * (quiet-sdk-logs.ts) like every worker in the tests: nothing printed, a failing test's warnings
 * and errors shown under its name. The SDK's default would print every line to the console.
 */
export function quietActivityEnvironment(): MockActivityEnvironment {
  return new MockActivityEnvironment({}, { logger: Runtime.instance().logger });
}
