import { execFileSync } from 'node:child_process';
import net from 'node:net';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../../src/shared/search-attributes';
import { startDevServer } from '../../src/temporal/dev-server';
import { devServerExecutable } from '../../src/temporal/provision';
import { findProcess } from './procstat';

export interface BenchServer {
  address: string;
  /**
   * The Temporal variables that reach this server besides TEMPORAL_ADDRESS (TLS files, namespace),
   * as the Temporal CLI reads them: given to the HTTP and worker processes, and read by the
   * driver's own client through the same module. None for the plain-text dev server.
   */
  env?: Record<string, string>;
  /** The server process, for CPU accounting. */
  pid: number;
  /** What `--version` of the executable said. */
  version: string;
  shutdown(): Promise<void>;
}

/**
 * The Temporal CLI dev server the project provisions, on free loopback ports, keeping its state in
 * memory (as the tests do): the same server for every variant a benchmark compares.
 */
export async function startBenchServer(): Promise<BenchServer> {
  const [port, uiPort] = [await freePort(), await freePort()];
  const server = await startDevServer({
    port,
    uiPort,
    ip: '127.0.0.1',
    // As `npm start` registers them: the starter and the workflows set these.
    searchAttributes: [...CUSTOM_SEARCH_ATTRIBUTES],
    log: (line) => process.stderr.write(`[temporal] ${line}\n`),
  });
  const pid = findProcess(
    (argv) => argv.includes('start-dev') && argv.includes('--port') && argv.includes(String(port)),
  );
  if (pid === undefined) {
    await server.shutdown();
    throw new Error(`started the dev server on port ${port} but cannot find its process`);
  }
  return {
    address: server.address,
    pid,
    version: await serverVersion(),
    shutdown: () => server.shutdown(),
  };
}

async function serverVersion(): Promise<string> {
  const executable = await devServerExecutable({ log: () => undefined });
  if (executable.type !== 'existing-path') return "the SDK's downloaded dev server";
  try {
    return execFileSync(executable.path, ['--version'], { encoding: 'utf8' })
      .split('\n')[0]!
      .trim();
  } catch {
    return executable.path;
  }
}

/** A port that was free a moment ago on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const probe = net.createServer();
  await new Promise<void>((resolve, reject) => {
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', resolve);
  });
  const { port } = probe.address() as net.AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
