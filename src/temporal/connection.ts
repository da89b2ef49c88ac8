import { inspect } from 'node:util';
import type { ConnectionOptions } from '@temporalio/client';
import type { NativeConnectionOptions } from '@temporalio/worker';

/**
 * How every process reaches Temporal: the settings read by src/config/temporal-connection.ts
 * (envconfig, as the Temporal CLI reads them), and the SDK options made from them. Connecting is
 * in client.ts (HTTP, operator commands) and worker-connection.ts (workers).
 */

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
  /** The setting that gave it, e.g. `TEMPORAL_TLS_CLIENT_CERT_PATH`. */
  name: string;
  /** The same with its file, e.g. `TEMPORAL_TLS_CLIENT_CERT_PATH=/etc/app.pem`. */
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
  /** One line, safe to log: how it connects. */
  summary: string;
}

/** Options for `Connection.connect` / `Connection.lazy` of @temporalio/client. */
export function clientConnectionOptions(
  settings: Pick<TemporalConnectionSettings, 'security'> | undefined,
  options: { address: string; connectTimeout?: number },
): ConnectionOptions {
  return { ...settings?.security.reveal(), ...options };
}

/** Options for `NativeConnection.connect` (workers). */
export function nativeConnectionOptions(
  settings: Pick<TemporalConnectionSettings, 'security'> | undefined,
  options: { address: string },
): NativeConnectionOptions {
  return { ...settings?.security.reveal(), ...options };
}
