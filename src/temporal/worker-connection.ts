import { NativeConnection } from '@temporalio/worker';
import { nativeConnectionOptions, type TemporalConnectionSettings } from './connection';

const FIRST_WAIT_MS = 1_000;
const MAX_WAIT_MS = 15_000;

export interface ConnectWhenReachableOptions {
  address: string;
  settings?: Pick<TemporalConnectionSettings, 'security'>;
  onRetry?: (info: { attempt: number; error: string; nextAttemptInMs: number }) => void;
  /** A shutdown signal: the promise resolves to `undefined`. */
  signal?: AbortSignal;
  firstWaitMs?: number;
}

/**
 * A worker started beside a Temporal that is still booting (docker compose, a rolling restart of
 * the cluster) starts polling the moment the server answers, instead of exiting and counting on
 * a process manager's back-off. It waits as long as it takes; the no-poller watchdog
 * (docs/operations.md) alerts when no worker polls.
 */
export async function connectWhenReachable(
  options: ConnectWhenReachableOptions,
): Promise<NativeConnection | undefined> {
  let wait = options.firstWaitMs ?? FIRST_WAIT_MS;
  for (let attempt = 1; ; attempt += 1) {
    if (options.signal?.aborted) return undefined;
    try {
      return await NativeConnection.connect(
        nativeConnectionOptions(options.settings, { address: options.address }),
      );
    } catch (err) {
      if (options.signal?.aborted) return undefined;
      options.onRetry?.({
        attempt,
        error: err instanceof Error ? err.message : String(err),
        nextAttemptInMs: wait,
      });
    }
    await abortableDelay(wait, options.signal);
    wait = Math.min(wait * 2, MAX_WAIT_MS);
  }
}

/** The log then says why the worker does not poll yet. */
export function connectWorker(
  address: string,
  settings: Pick<TemporalConnectionSettings, 'security' | 'summary'>,
  logger: { warn(fields: object, message: string): void },
  signal: AbortSignal,
): Promise<NativeConnection | undefined> {
  return connectWhenReachable({
    address,
    settings,
    signal,
    onRetry: (info) =>
      logger.warn(
        { temporalAddress: address, temporalConnection: settings.summary, ...info },
        'Temporal is not reachable yet; waiting for it before polling',
      ),
  });
}

function abortableDelay(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
