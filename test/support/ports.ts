import { createServer } from 'node:net';

/**
 * A TCP port on 127.0.0.1 that was free when probed and is closed again: for a server a test
 * starts next, or as an address where nothing listens.
 */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  if (typeof address !== 'object' || address === null) throw new Error('could not probe a port');
  return address.port;
}

/** Whether nothing listens on the port on 127.0.0.1 now (a server stopped and freed it). */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}
