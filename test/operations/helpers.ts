import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';

export { eventually } from '../support/eventually';

export { startAlertSink, type AlertSink } from '../support/alert-sink';

export { freePort } from '../../harness/ports';

/** The production worker entry (src/worker.ts) in a child process, its stderr relayed. */
export interface WorkerProcess {
  child: ChildProcess;
  /** Everything it printed so far (JSON log lines). */
  output(): string;
  /** Resolves with the exit code (null when killed by a signal). */
  exited: Promise<number | null>;
}

export function spawnWorker(env: NodeJS.ProcessEnv): WorkerProcess {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', resolve(__dirname, '../../src/worker.ts')],
    {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString('utf8');
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  return { child, output: () => output, exited };
}

/** SIGTERM, then waits (at most `timeoutMs`) for the worker to exit by itself; SIGKILL after. */
export async function stopWorker(
  worker: WorkerProcess,
  timeoutMs = 30_000,
): Promise<number | null> {
  if (worker.child.exitCode !== null || worker.child.signalCode !== null) return worker.exited;
  worker.child.kill('SIGTERM');
  let timer: NodeJS.Timeout | undefined;
  const outcome = await Promise.race([
    worker.exited,
    new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), timeoutMs))),
  ]);
  clearTimeout(timer);
  if (outcome === 'timeout') {
    worker.child.kill('SIGKILL');
    throw new Error(
      `worker ${worker.child.pid} did not stop within ${timeoutMs} ms of SIGTERM:\n${worker.output()}`,
    );
  }
  return outcome;
}
