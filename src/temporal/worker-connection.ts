import { NativeConnection } from '@temporalio/worker';
import { nativeConnectionOptions, type TemporalConnectionSettings } from './connection';

/** First wait after a failed connect; it doubles up to MAX_WAIT_MS. */
const FIRST_WAIT_MS = 1_000;
const MAX_WAIT_MS = 15_000;

export interface ConnectWhenReachableOptions {
  address: string;
  /** TLS, API key, gRPC headers (config.temporalConnection); none: plain text. */
  settings?: Pick<TemporalConnectionSettings, 'tls' | 'apiKey' | 'metadata'>;
  /** Told about each failed attempt and the wait before the next. */
  onRetry?: (info: { attempt: number; error: string; nextAttemptInMs: number }) => void;
  /** Stops waiting (a shutdown signal): the promise resolves to `undefined`. */
  signal?: AbortSignal;
  /** Test hook: the first wait (default 1 s). */
  firstWaitMs?: number;
}

/**
 * Connects a worker to Temporal, waiting for the server when it is not up yet. A worker started
 * beside a Temporal that is still booting (docker compose, a node reboot, a rolling restart of
 * the cluster) then starts polling the moment the server answers, instead of exiting and
 * counting on a process manager's restart back-off. It waits as long as it takes, saying so on
 * every attempt; the no-poller watchdog (docs/operations.md) alerts when no worker polls.
 * Resolves to `undefined` when `signal` aborts first.
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

/**
 * connectWhenReachable for a worker process: each failed attempt is a warning naming the address,
 * so the log says why the worker does not poll yet.
 */
export function connectWorker(
  address: string,
  settings: Pick<TemporalConnectionSettings, 'tls' | 'apiKey' | 'metadata' | 'summary'>,
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
