import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { eventually } from './eventually';
import { freePort, portIsFree } from '../../harness/ports';

// `npm start`, the way the README runs it: the whole stack in one process on embedded defaults
// (its own Temporal dev server, SQLite, simulator, SMTP sink), here on free ports and a
// throwaway data folder. Test files call `stopDevStacks` after each test.

export const ROOT = path.resolve(__dirname, '../..');

export interface Stack {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
  env: NodeJS.ProcessEnv;
  ports: number[];
  temporalPort: number;
}

const dirs: string[] = [];
const children: ChildProcess[] = [];

/** Kills what a test left running and removes its data folders (call it in afterEach). */
export async function stopDevStacks(): Promise<void> {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
}

async function stackEnv(settings: NodeJS.ProcessEnv) {
  const dir = await mkdtemp(path.join(tmpdir(), 'order-payments-stack-'));
  dirs.push(dir);
  const [http, temporal, ui, warehouse, smtp, metrics, admin] = await Promise.all(
    Array.from({ length: 7 }, () => freePort()),
  );
  const {
    TEMPORAL_ADDRESS: _a,
    DATABASE_URL: _d,
    SMTP_URL: _s,
    WAREHOUSE_API_URL: _w,
    PAYLOAD_ENCRYPTION_KEY: _k,
    npm_lifecycle_event: _e,
    ...inherited
  } = process.env;
  const env: NodeJS.ProcessEnv = {
    ...inherited,
    NODE_ENV: 'development',
    LOG_LEVEL: 'info',
    PORT: String(http),
    TEMPORAL_DEV_PORT: String(temporal),
    TEMPORAL_UI_PORT: String(ui),
    WAREHOUSE_SIMULATOR_PORT: String(warehouse),
    SMTP_SINK_PORT: String(smtp),
    WORKER_METRICS_ADDRESS: `127.0.0.1:${metrics}`,
    ADMIN_ADDRESS: `127.0.0.1:${admin}`,
    DATABASE_URL: `sqlite:${path.join(dir, 'app.db')}`,
    TEMPORAL_DEV_DB: path.join(dir, 'temporal.db'),
    INVOICE_DIR: path.join(dir, 'invoices'),
    EXPORT_DIR: path.join(dir, 'exports'),
    WAREHOUSE_SIMULATOR_STATE: path.join(dir, 'warehouse-simulator.json'),
    ...settings,
  };
  return {
    env,
    ports: [http!, temporal!, ui!, warehouse!, smtp!, metrics!, admin!],
    temporalPort: temporal!,
  };
}

/**
 * Starts the stack (`npm start`, or its command directly) and waits for its banner. `settings`:
 * environment variables beyond the free ports and the throwaway folder; `args`: its command line.
 */
export async function startStack(
  viaNpm: boolean,
  settings: NodeJS.ProcessEnv = {},
  args: string[] = [],
): Promise<Stack> {
  const { env, ports, temporalPort } = await stackEnv(settings);
  const child = viaNpm
    ? spawn('npm', ['start', '--', ...args], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, ['--import', 'tsx', 'dev/stack.ts', ...args], {
        cwd: ROOT,
        env,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
  children.push(child);
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  await eventually(() => expect(output).toContain('Order payments is running:'), {
    timeoutMs: 90_000,
  });
  return { child, output: () => output, exited, env, ports, temporalPort };
}

export async function expectAllPortsFree(stack: Stack): Promise<void> {
  await eventually(
    async () => {
      for (const port of stack.ports) expect([port, await portIsFree(port)]).toEqual([port, true]);
    },
    { timeoutMs: 20_000 },
  );
}

/** The stack ended with exit `code`, having printed `why` (when given), and freed every port. */
export async function expectStopped(stack: Stack, code: number, why?: string): Promise<void> {
  expect(await stack.exited).toBe(code);
  if (why !== undefined) expect(stack.output()).toContain(why);
  await expectAllPortsFree(stack);
}

/** The PID of the process printing the stack's JSON log lines (main.ts itself). */
export function stackPid(stack: Stack): number {
  const pid = Number(/"pid":(\d+),"hostname":"[^"]*","name":"dev-stack"/.exec(stack.output())?.[1]);
  expect(Number.isInteger(pid)).toBe(true);
  return pid;
}

/** Runs a TypeScript entry of the project (dev/demo.ts, src/cli/ops.ts) as `run` does. */
export const runScript = (script: string, args: string[], env: NodeJS.ProcessEnv) =>
  run(process.execPath, ['--import', 'tsx', script, ...args], env);

/** Runs a command in the project folder to its end: exit code and everything it printed. */
export function run(command: string, args: string[], env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number | null; output: string }>((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => resolve({ code, output }));
  });
}
