import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';

/**
 * A client whose connection is opened lazily: the HTTP process starts (and answers 503) even
 * while Temporal is down, and reconnects by itself when it comes back.
 */
export function createLazyClient(options: {
  address: string;
  namespace: string;
  dataConverter?: DataConverter;
}): Client {
  const connection = Connection.lazy({ address: options.address });
  return new Client({
    connection,
    namespace: options.namespace,
    dataConverter: options.dataConverter,
  });
}
