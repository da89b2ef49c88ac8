import { appendFileSync } from 'node:fs';
import path from 'node:path';
import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';

/**
 * The SDK's logs during tests (worker, workflow and activity logs). Many are expected: tests fail
 * activities and workflows on purpose, and the alert tests look for an error line. So nothing is
 * printed while the tests run. Every entry is kept in memory, for tests that assert on a log line and for
 * sdk-log-environment.js, which appends a failing test's warnings and errors to its failure
 * message; warnings and errors also go to the run's log file (global setup prints its path).
 * Runs once per test file, before it imports anything.
 */
const entries: LogEntry[] = [];
(globalThis as { __sdkLogEntries?: LogEntry[] }).__sdkLogEntries = entries;
const logFile = process.env.TEST_LOG_DIR && path.join(process.env.TEST_LOG_DIR, 'sdk.log');
// "file › test" of the running test, set by sdk-log-environment.ts as each test starts. Not read
// from `expect` when logging: the SDK can log after jest has torn this file's globals down.
let where = '';
(globalThis as { __setSdkLogTest?: (label: string) => void }).__setSdkLogTest = (label) => {
  where = label;
};

Runtime.install({
  logger: new DefaultLogger('INFO', (entry) => {
    entries.push(entry);
    if (logFile && (entry.level === 'WARN' || entry.level === 'ERROR')) {
      appendFileSync(logFile, `${formatSdkLogEntry(entry, where)}\n`);
    }
  }),
});

/** One line per entry: level, where in the test run, message and metadata. */
function formatSdkLogEntry(entry: LogEntry, where: string): string {
  const meta = JSON.stringify(entry.meta ?? {}, bigintSafe);
  return `[sdk ${entry.level}] ${where}: ${entry.message} ${meta}`;
}

function bigintSafe(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}
