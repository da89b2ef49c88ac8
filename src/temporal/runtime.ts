import { DefaultLogger, type LogEntry, type LogLevel, Runtime } from '@temporalio/worker';
import type { Logger } from '../logger';

const PINO_LEVEL: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/**
 * Routes the SDK's own logs (native core, workflow `log`, activity `log`) into our structured
 * logger, so one sink holds everything with the SDK's metadata (workflowId, activityType…) as
 * fields. Must run once per process, before the first NativeConnection or Worker.
 *
 * Shutdown signals are left to the caller (empty list): the process entry decides the order in
 * which HTTP, worker and connections close.
 */
export function installTemporalRuntime(logger: Logger): void {
  const sdkLogger = logger.child({ component: 'temporal-sdk' });
  Runtime.install({
    logger: new DefaultLogger('INFO', (entry: LogEntry) => {
      sdkLogger[PINO_LEVEL[entry.level]](entry.meta ?? {}, entry.message);
    }),
    telemetryOptions: { logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} } },
    shutdownSignals: [],
  });
}
