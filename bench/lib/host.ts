import { fork, type ChildProcess } from 'node:child_process';

/**
 * Child processes ("hosts") that each run one part of the system under test (the HTTP server,
 * the worker), so the driver can measure each process on its own and the load generator never
 * shares an event loop with what it loads. The driver calls a host's commands over IPC.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Command = (args: any) => Promise<unknown>;
export type HostApi = Record<string, Command>;

type ToHost = { type: 'call'; id: number; command: string; args: unknown };
type FromHost =
  | { type: 'ready' }
  | { type: 'reply'; id: number; ok: true; value: unknown }
  | { type: 'reply'; id: number; ok: false; error: string };

const CALL_TIMEOUT_MS = 5 * 60_000;
const STOP_GRACE_MS = 15_000;

export interface Host<Api extends HostApi> {
  readonly pid: number;
  call<K extends keyof Api & string>(
    command: K,
    args: Parameters<Api[K]>[0],
  ): Promise<Awaited<ReturnType<Api[K]>>>;
  /** Calls the host's `close` command if it has one, then waits for it to exit. */
  stop(): Promise<void>;
}

export interface ForkOptions {
  env?: Record<string, string>;
  /** Node flags besides the TypeScript loader (e.g. --expose-gc). */
  nodeFlags?: string[];
  /** Where the host's stdout goes: a file descriptor (its logs), or 'ignore'. */
  stdout?: number | 'ignore' | 'inherit';
}

/** Starts a host script (TypeScript, through tsx) and resolves once it said it is ready. */
export async function startHost<Api extends HostApi>(
  script: string,
  options: ForkOptions = {},
): Promise<Host<Api>> {
  const child = fork(script, [], {
    execArgv: ['--import', 'tsx', ...(options.nodeFlags ?? [])],
    env: { ...process.env, ...options.env },
    stdio: ['ignore', options.stdout ?? 'inherit', 'inherit', 'ipc'],
  });
  const pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  let nextId = 1;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  void exited.then(() => {
    for (const { reject } of pending.values()) reject(new Error(`host ${script} exited`));
    pending.clear();
  });

  await new Promise<void>((resolve, reject) => {
    const onMessage = (message: FromHost) => {
      if (message.type === 'ready') {
        child.off('message', onMessage);
        resolve();
      }
    };
    child.on('message', onMessage);
    child.once('exit', (code) =>
      reject(new Error(`host ${script} exited with ${code} during start-up`)),
    );
  });

  child.on('message', (message: FromHost) => {
    if (message.type !== 'reply') return;
    const waiter = pending.get(message.id);
    if (!waiter) return;
    pending.delete(message.id);
    if (message.ok) waiter.resolve(message.value);
    else waiter.reject(new Error(message.error));
  });

  const call = (command: string, args: unknown) =>
    new Promise<unknown>((resolve, reject) => {
      const id = nextId++;
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`host ${script}: ${command} took longer than ${CALL_TIMEOUT_MS} ms`));
      }, CALL_TIMEOUT_MS);
      pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      child.send({ type: 'call', id, command, args } satisfies ToHost);
    });

  return {
    pid: child.pid!,
    call: call as Host<Api>['call'],
    stop: () => stopChild(child, call, exited),
  };
}

async function stopChild(
  child: ChildProcess,
  call: (command: string, args: unknown) => Promise<unknown>,
  exited: Promise<void>,
): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const timer = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  try {
    await call('close', undefined).catch(() => undefined);
    child.disconnect();
    await exited;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The host side: answers the driver's commands and exits when the driver goes away (so a killed
 * benchmark leaves no process behind).
 */
export function serveHost(api: HostApi): void {
  if (!process.send) throw new Error('a bench host must be started by the benchmark driver');
  const send = (message: FromHost) => process.send?.(message);
  process.on('message', (message: ToHost) => {
    if (message.type !== 'call') return;
    const command = api[message.command];
    if (!command) {
      send({ type: 'reply', id: message.id, ok: false, error: `no command ${message.command}` });
      return;
    }
    command(message.args).then(
      (value) => send({ type: 'reply', id: message.id, ok: true, value: value ?? null }),
      (error: unknown) =>
        send({
          type: 'reply',
          id: message.id,
          ok: false,
          error: error instanceof Error ? (error.stack ?? error.message) : String(error),
        }),
    );
  });
  process.on('disconnect', () => process.exit(0));
  send({ type: 'ready' });
}
