import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { clientConnectionOptions, type TemporalConnectionSettings } from './connection';

/**
 * A client whose connection is opened lazily: the HTTP process starts (and answers 503) even
 * while Temporal is down, and reconnects by itself when it comes back.
 */
export function createLazyClient(options: {
  address: string;
  namespace: string;
  /** TLS, API key, gRPC headers (config.temporalConnection); none: plain text. */
  settings?: Pick<TemporalConnectionSettings, 'tls' | 'apiKey' | 'metadata'>;
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
