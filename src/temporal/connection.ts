import { setTimeout as delay } from 'node:timers/promises';
import { inspect } from 'node:util';
import { Client, Connection, type ConnectionOptions } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection, type NativeConnectionOptions } from '@temporalio/worker';

/** JSON, `util.inspect` and string conversion all redact it, so a logged config leaks nothing. */
export class Secret<T> {
  readonly #value: T;
  constructor(value: T) {
    this.#value = value;
  }
  reveal(): T {
    return this.#value;
  }
  toJSON = () => '[redacted]';
  toString = () => '[redacted]';
  [inspect.custom] = () => '[redacted]';
}

/** envconfig's connection options but the address: TLS, API key, gRPC headers. */
export type ConnectionSecurity = Pick<NativeConnectionOptions, 'tls' | 'apiKey' | 'metadata'>;

export interface ClientCertificate {
  subject: string;
  notAfter: Date;
  /** The setting that gave it, and the same with its file: `…_CERT_PATH=/etc/app.pem`. */
  name: string;
  from: string;
}

export interface TemporalConnectionSettings {
  /** undefined: the embedded dev server. */
  address: string | undefined;
  namespace: string | undefined;
  /** What the TLS options hold, without a secret; undefined: plain text. */
  tls: { serverName?: string; serverCa?: string; clientCert?: ClientCertificate } | undefined;
  apiKey: boolean;
  security: Secret<ConnectionSecurity>;
  profile: { name: string; file: string } | undefined;
  summary: string;
}

export function clientConnectionOptions(
  settings: Settings | undefined,
  options: { address: string; connectTimeout?: number },
): ConnectionOptions {
  return { ...settings?.security.reveal(), ...options };
}

export function nativeConnectionOptions(
  settings: Settings | undefined,
  options: { address: string },
): NativeConnectionOptions {
  return { ...settings?.security.reveal(), ...options };
}

type Settings = Pick<TemporalConnectionSettings, 'security'>;

/**
 * Lazy, so the HTTP process starts (and answers 503) while Temporal is down, and reconnects by
 * itself when it comes back.
 */
export function createLazyClient(options: {
  address: string;
  namespace: string;
  settings?: Settings;
  dataConverter?: DataConverter;
}): Client {
  const connection = Connection.lazy(
    clientConnectionOptions(options.settings, { address: options.address }),
  );
  return new Client({
    connection,
    namespace: options.namespace,
    dataConverter: options.dataConverter,
  });
}

/** For a person at a terminal (operator commands, set-up, doctor): fails within `timeoutMs`. */
export function connectClient(
  settings: Settings | undefined,
  options: { address: string; timeoutMs: number },
): Promise<Connection> {
  return Connection.connect(
    clientConnectionOptions(settings, {
      address: options.address,
      connectTimeout: options.timeoutMs,
    }),
  );
}

const FIRST_WAIT_MS = 1_000;
const MAX_WAIT_MS = 15_000;

export interface ConnectWhenReachableOptions {
  address: string;
  settings?: Settings;
  onRetry?: (info: { attempt: number; error: string; nextAttemptInMs: number }) => void;
  signal?: AbortSignal;
  firstWaitMs?: number;
}

/**
 * A worker beside a booting Temporal polls the moment it answers instead of exiting into a
 * process manager's back-off; it waits as long as it takes (the no-poller watchdog alerts).
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
    // Aborted (shutdown): the loop's check returns.
    await delay(wait, undefined, { signal: options.signal }).catch(() => undefined);
    wait = Math.min(wait * 2, MAX_WAIT_MS);
  }
}

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
