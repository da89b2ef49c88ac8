import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { clientConnectionOptions, type TemporalConnectionSettings } from './connection';

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

/**
 * For a person at a terminal (operator commands, set-up, doctor): fails within `timeoutMs`. Why
 * it failed beyond the SDK's message is the doctor's job (src/doctor/connection.ts).
 */
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
