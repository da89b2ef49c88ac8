import { Client, Connection } from '@temporalio/client';

/**
 * A client whose connection is opened lazily: the HTTP process starts (and answers 503) even
 * while Temporal is down, and reconnects by itself when it comes back.
 */
export function createLazyClient(options: { address: string; namespace: string }): Client {
  const connection = Connection.lazy({ address: options.address });
  return new Client({ connection, namespace: options.namespace });
}
