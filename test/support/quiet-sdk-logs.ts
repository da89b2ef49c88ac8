import { DefaultLogger, Runtime } from '@temporalio/worker';

// Test output shows the SDK's warnings and errors only; info lines from every worker and
// activity would bury the test report. Runs once per test file, before it imports anything.
Runtime.install({ logger: new DefaultLogger('WARN') });
