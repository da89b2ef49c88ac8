import { DefaultLogger, Runtime, type LogEntry } from '@temporalio/worker';

/**
 * The SDK's logs during tests: warnings and errors are printed, everything is kept in memory so
 * a test can assert on a log line (for example the one structured alert per failed workflow).
 * Runs once per test file, before it imports anything.
 */
const entries: LogEntry[] = [];
(globalThis as { __sdkLogEntries?: LogEntry[] }).__sdkLogEntries = entries;

Runtime.install({
  logger: new DefaultLogger('INFO', (entry) => {
    entries.push(entry);
    if (entry.level === 'WARN' || entry.level === 'ERROR') {
      process.stderr.write(
        `[sdk ${entry.level}] ${entry.message} ${JSON.stringify(entry.meta ?? {}, bigintSafe)}\n`,
      );
    }
  }),
});

function bigintSafe(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}
