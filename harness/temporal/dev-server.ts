import { execFile, spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { TypedSearchAttributes } from '@temporalio/common';
import { type DevServerConfig, TestWorkflowEnvironment } from '@temporalio/testing';
import { dialHost, localHttpUrl } from '../../src/net/addresses';
import { devServerExecutable } from './provision';
import { startOrphanWatchdog } from '../process/watchdog';

export interface DevServerOptions {
  /** gRPC port; 7233 by default, where Temporal tools look first. */
  port?: number;
  /** Web UI port; 8233 by default, as `temporal server start-dev` does. */
  uiPort?: number;
  /** SQLite file that keeps workflows across restarts; in memory when unset. */
  dbFilename?: string;
  namespace?: string;
  ip?: string;
  log?: (line: string) => void;
  /** Custom search attributes to register at start-up. */
  searchAttributes?: DevServerConfig['searchAttributes'];
  /** Codec endpoint the Web UI calls to show encrypted payloads in clear. */
  uiCodecEndpoint?: string;
}

export interface DevServer {
  /** host:port for clients and workers. */
  address: string;
  /** Undefined when the only server available is the Java stand-in, which has no Web UI. */
  uiUrl: string | undefined;
  /** Stops the server and waits for it to exit; safe to call more than once. */
  shutdown(): Promise<void>;
  /**
   * Resolves when the server process exits without shutdown() having been called (a crash, a
   * kill), with the last lines it printed. Never resolves for the SDK-run server, whose process
   * the SDK keeps to itself.
   */
  crashed: Promise<string>;
  /** The server's process ID, when this module runs it (not the SDK). */
  pid: number | undefined;
}

// The first start of a persistent database creates its schema: allow far more than the SDK's 5 s.
const READY_TIMEOUT_MS = 60_000;
// The dev server flushes SQLite and stops its services in a few seconds; past this, it is stuck.
const STOP_GRACE_MS = 10_000;
const OUTPUT_TAIL_LINES = 30;

/**
 * Starts the embedded Temporal dev server for `npm start`: file persistence and the Web UI, on
 * the executable provisioning found (see ./provision). Its own process group keeps a terminal's
 * Ctrl-C away from it, so the caller can drain its workers before calling shutdown().
 */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const log = options.log ?? ((line: string) => process.stderr.write(`[temporal] ${line}\n`));
  const ip = options.ip ?? '127.0.0.1';
  const port = options.port ?? 7233;
  const uiPort = options.uiPort ?? 8233;
  const namespace = options.namespace ?? 'default';

  await assertPortFree(ip, port, `Temporal's gRPC port ${port}`);
  const executable = await devServerExecutable({ log });
  if (options.dbFilename) {
    await fs.mkdir(path.dirname(path.resolve(options.dbFilename)), { recursive: true });
  }

  if (executable.type === 'cached-download') {
    // Only when the SDK owns the binary's location; it then also owns the process (and stops it
    // with SIGKILL, which SQLite survives).
    await assertPortFree(ip, uiPort, `the Web UI port ${uiPort}`);
    const env = await TestWorkflowEnvironment.createLocal({
      server: {
        executable,
        ip,
        port,
        ui: true,
        uiPort,
        namespace,
        dbFilename: options.dbFilename,
        searchAttributes: options.searchAttributes,
        extraArgs: options.uiCodecEndpoint ? ['--ui-codec-endpoint', options.uiCodecEndpoint] : [],
      },
    });
    return {
      address: env.address,
      uiUrl: localHttpUrl(ip, uiPort),
      shutdown: onlyOnce(() => env.teardown()),
      crashed: new Promise<string>(() => {}),
      pid: undefined,
    };
  }

  const version = await describeExecutable(executable.path);
  const hasUi = version.startsWith('temporal version ');
  if (hasUi) {
    await assertPortFree(ip, uiPort, `the Web UI port ${uiPort}`);
    log(`Starting ${version}`);
  } else {
    log(
      `Starting ${version}: the Temporal CLI could not be provisioned, so there is no Web UI` +
        (options.dbFilename ? ' and workflows are lost when it stops.' : '.'),
    );
  }

  const args = ['server', 'start-dev', '--ip', ip, '--port', String(port)];
  args.push('--namespace', namespace, '--log-format', 'text', '--log-level', 'warn');
  // No call home to check for newer versions: the machine may be offline, and it only adds noise.
  args.push('--dynamic-config-value', 'frontend.enableServerVersionCheck=false');
  // Eager activity dispatch: an activity scheduled by a workflow task goes back to the worker in
  // the answer to that task's completion, instead of through the task queue and a poll (the SDK
  // asks for it when it has a free slot). Off by default in the server; measured in
  // docs/benchmarks.md (issue 12). Clusters set the same key in their dynamic config.
  args.push('--dynamic-config-value', 'system.enableActivityEagerExecution=true');
  if (options.dbFilename) args.push('--db-filename', options.dbFilename);
  args.push(...(hasUi ? ['--ui-port', String(uiPort)] : ['--headless']));
  if (hasUi && options.uiCodecEndpoint) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
  for (const { name, type } of options.searchAttributes ?? []) {
    args.push('--search-attribute', `${name}=${TypedSearchAttributes.toMetadataType(type)}`);
  }

  const server = spawnServer(executable.path, args, log);
  const address = `${dialHost(ip)}:${port}`;
  try {
    await waitUntilReady(server, address, hasUi ? namespace : undefined);
  } catch (error) {
    await server.stop();
    throw error;
  }
  log(
    `Temporal dev server ready at ${address}${hasUi ? `, Web UI at ${localHttpUrl(ip, uiPort)}` : ''}`,
  );
  return {
    address,
    uiUrl: hasUi ? localHttpUrl(ip, uiPort) : undefined,
    shutdown: onlyOnce(() => server.stop()),
    crashed: server.exited.then((output) =>
      server.stopping() ? new Promise<string>(() => {}) : output,
    ),
    pid: server.pid,
  };
}

interface RunningServer {
  /** Set once the process has exited, with what it last printed. */
  exited: Promise<string>;
  stop(): Promise<void>;
  /** stop() was called: an exit is expected. */
  stopping(): boolean;
  pid: number | undefined;
}

function spawnServer(
  executablePath: string,
  args: string[],
  log: (line: string) => void,
): RunningServer {
  const child = spawn(executablePath, args, { detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const recent: string[] = [];
  let stopping = false;
  const onOutput = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line.trim()) continue;
      recent.push(line);
      if (recent.length > OUTPUT_TAIL_LINES) recent.shift();
      // Its services complain about closed connections while stopping: expected, not news.
      if (!stopping) log(line);
    }
  };
  child.stdout?.on('data', onOutput);
  child.stderr?.on('data', onOutput);

  // A detached child outlives us unless killed: cover exits that skip shutdown(). 'exit' covers
  // process.exit and uncaught errors; the watchdog covers deaths that run no code of ours (kill
  // -9, a closed terminal's SIGHUP), which would leave the server holding its ports.
  const killOnExit = () => child.kill('SIGKILL');
  process.on('exit', killOnExit);
  // Once we are gone it stops the server (SIGTERM, so it flushes its SQLite file; SIGKILL if it
  // lingers), and it is stopped as soon as the server exits, so it never signals a reused PID.
  const watchdog =
    child.pid === undefined
      ? undefined
      : startOrphanWatchdog([
          `kill -TERM ${child.pid} 2>/dev/null`,
          `for i in $(seq ${STOP_GRACE_MS / 1000}); do kill -0 ${child.pid} 2>/dev/null || exit 0; sleep 1; done`,
          `kill -KILL ${child.pid} 2>/dev/null`,
        ]);
  const exited = new Promise<string>((resolve) => {
    child.once('error', (error) => {
      watchdog?.stop();
      recent.push(error.message);
      resolve(recent.join('\n'));
    });
    child.once('exit', (code, signal) => {
      // Gone, so its PID may be reused: the watchdog must not signal it any more.
      watchdog?.stop();
      process.off('exit', killOnExit);
      if (!stopping) recent.push(`(exited with ${signal ?? `code ${code}`})`);
      resolve(recent.join('\n'));
    });
  });

  const stop = async () => {
    stopping = true;
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
      await exited;
      clearTimeout(timer);
    }
  };
  return { exited, stop, stopping: () => stopping, pid: child.pid };
}

async function waitUntilReady(
  server: RunningServer,
  address: string,
  namespace: string | undefined,
): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let exitOutput: string | undefined;
  void server.exited.then((output) => (exitOutput = output));
  let lastError: unknown;
  while (Date.now() < deadline) {
    if (exitOutput !== undefined) {
      throw new Error(`The Temporal dev server stopped during start-up:\n${exitOutput}`);
    }
    try {
      const connection = await Connection.connect({ address, connectTimeout: 1_000 });
      try {
        await connection.workflowService.getSystemInfo({});
        // The CLI creates the namespace just after it starts serving.
        if (namespace) await connection.workflowService.describeNamespace({ namespace });
        return;
      } finally {
        await connection.close();
      }
    } catch (error) {
      lastError = error;
    }
    await delay(250);
  }
  const reason = lastError instanceof Error ? lastError.message : String(lastError);
  throw new Error(
    `The Temporal dev server did not answer at ${address} within ${READY_TIMEOUT_MS / 1000}s: ${reason}`,
  );
}

/** First line of `--version`: the real CLI says "temporal version …", the Java stand-in does not. */
async function describeExecutable(executablePath: string): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)(executablePath, ['--version'], {
      timeout: 30_000,
    });
    return stdout.trim().split('\n')[0] ?? executablePath;
  } catch (error) {
    throw new Error(
      `Cannot run the Temporal dev server at ${executablePath}: ${(error as Error).message}`,
    );
  }
}

async function assertPortFree(ip: string, port: number, what: string): Promise<void> {
  const probe = net.createServer();
  try {
    await new Promise<void>((resolve, reject) => {
      probe.once('error', reject);
      probe.listen({ host: ip, port }, resolve);
    });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE') throw error;
    throw new Error(
      `Cannot start the Temporal dev server: ${what} on ${ip} is already in use. ` +
        'Another Temporal server (perhaps left over from an earlier run) may hold it: stop it, ' +
        'point the app at it with TEMPORAL_ADDRESS, or choose other ports (TEMPORAL_DEV_PORT, ' +
        'TEMPORAL_UI_PORT).',
    );
  } finally {
    if (probe.listening) await new Promise<void>((resolve) => probe.close(() => resolve()));
  }
}

function onlyOnce(stop: () => Promise<void>): () => Promise<void> {
  let stopping: Promise<void> | undefined;
  return () => (stopping ??= stop());
}
