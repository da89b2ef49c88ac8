import { DefaultLogger, type LogEntry, type LogLevel, Runtime } from '@temporalio/worker';
import type { Logger } from '../logger';
import { BusinessMetric, PAYMENT_TO_SHIPMENT_BUCKETS_SECONDS } from '../shared/business-metrics';

const PINO_LEVEL: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

export const DEV_WORKER_METRICS_ADDRESS = '127.0.0.1:9464';

export interface TemporalRuntimeOptions {
  /** host:port of a Prometheus `/metrics` for the SDK's own metrics; unset: none. */
  metricsAddress?: string;
}

/**
 * Once per process, before the first NativeConnection or Worker. No shutdown signals: the process
 * entry decides the order in which HTTP, worker and connections close.
 */
export function installTemporalRuntime(logger: Logger, options: TemporalRuntimeOptions = {}): void {
  const sdkLogger = logger.child({ component: 'temporal-sdk' });
  try {
    Runtime.install({
      logger: new DefaultLogger('INFO', (entry: LogEntry) => {
        sdkLogger[PINO_LEVEL[entry.level]](entry.meta ?? {}, entry.message);
      }),
      telemetryOptions: {
        logging: { filter: { core: 'WARN', other: 'ERROR' }, forward: {} },
        ...(options.metricsAddress
          ? {
              metrics: {
                prometheus: {
                  bindAddress: options.metricsAddress,
                  // The SDK's default buckets suit milliseconds; this one counts seconds.
                  histogramBucketOverrides: {
                    [BusinessMetric.paymentToShipment]: [...PAYMENT_TO_SHIPMENT_BUCKETS_SECONDS],
                  },
                },
              },
            }
          : {}),
      },
      shutdownSignals: [],
    });
  } catch (error) {
    if (!options.metricsAddress || !/prometheus/i.test(String(error))) throw error;
    throw new Error(
      `Cannot serve the worker's metrics on ${options.metricsAddress} (${(error as Error).message}): ` +
        'set WORKER_METRICS_ADDRESS to a free host:port, or to off',
      { cause: error },
    );
  }
}

/** The metrics address a process should use: `off` and unset mean none, unless a default is given. */
export function metricsAddressFrom(
  setting: string | undefined,
  fallback?: string,
): string | undefined {
  if (setting === 'off') return undefined;
  return setting ?? fallback;
}
