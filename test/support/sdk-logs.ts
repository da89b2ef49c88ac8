import type { LogEntry } from '@temporalio/worker';

/** SDK log entries (workflow, activity and worker logs) recorded so far in this test file. */
export function sdkLogEntries(): LogEntry[] {
  return (globalThis as { __sdkLogEntries?: LogEntry[] }).__sdkLogEntries ?? [];
}
