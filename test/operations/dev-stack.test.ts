import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { portIsFree } from '../support/ports';
import { eventually, freePort } from './helpers';

// `npm start`, the way the README runs it: the whole stack in one process on embedded defaults
// (its own Temporal dev server, SQLite, simulator, SMTP sink), here on free ports and a
// throwaway data folder. `npm run demo` against it, Ctrl-C, and the ways it can die.

const ROOT = path.resolve(__dirname, '../..');

interface Stack {
  child: ChildProcess;
  output(): string;
  exited: Promise<number | null>;
  env: NodeJS.ProcessEnv;
  ports: number[];
  temporalPort: number;
}

const dirs: string[] = [];
const children: ChildProcess[] = [];

afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  }
  await Promise.all(dirs.splice(0).map((dir) => rm(dir, { recursive: true, force: true })));
});

async function stackEnv() {
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
  };
  return {
    env,
    ports: [http!, temporal!, ui!, warehouse!, smtp!, metrics!, admin!],
    temporalPort: temporal!,
  };
}

/** Starts the stack (`npm start`, or its command directly) and waits for its banner. */
async function startStack(viaNpm: boolean): Promise<Stack> {
  const { env, ports, temporalPort } = await stackEnv();
  const child = viaNpm
    ? spawn('npm', ['start'], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] })
    : spawn(process.execPath, ['--import', 'tsx', 'dev/stack.ts'], {
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

async function expectAllPortsFree(stack: Stack): Promise<void> {
  await eventually(
    async () => {
      for (const port of stack.ports) expect([port, await portIsFree(port)]).toEqual([port, true]);
    },
    { timeoutMs: 20_000 },
  );
}

/** The PID of the process printing the stack's JSON log lines (main.ts itself). */
function stackPid(stack: Stack): number {
  const pid = Number(/"pid":(\d+),"hostname":"[^"]*","name":"dev-stack"/.exec(stack.output())?.[1]);
  expect(Number.isInteger(pid)).toBe(true);
  return pid;
}

function run(command: string, args: string[], env: NodeJS.ProcessEnv) {
  return new Promise<{ code: number | null; output: string }>((resolve) => {
    const child = spawn(command, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.once('exit', (code) => resolve({ code, output }));
  });
}

describe('npm start (the dev stack)', () => {
  it('runs the demo end to end, then stops cleanly on Ctrl-C, freeing every port', async () => {
    const stack = await startStack(false);

    const demo = await run(process.execPath, ['--import', 'tsx', 'dev/demo.ts'], stack.env);
    expect(demo.code).toBe(0);
    expect(demo.output).toMatch(/payment\.succeeded\s+-> 200 \{"status":"accepted"\}/);
    expect(demo.output).toMatch(/forged signature\s+-> 401/);
    expect(demo.output).toMatch(/status=paid, shipment_status=requested, payments recorded=1/);
    expect(demo.output).toMatch(/Warehouse simulator: 1 shipment request\(s\)/);

    // Operators' endpoints on the admin listener only; the public port keeps /healthz.
    const [http, admin] = [stack.ports[0], stack.ports[6]];
    expect(stack.output()).toContain(`Metrics          http://127.0.0.1:${admin}/metrics`);
    expect((await fetch(`http://127.0.0.1:${admin}/metrics`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${admin}/readyz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${http}/metrics`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${http}/readyz`)).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${http}/healthz`)).status).toBe(200);

    stack.child.kill('SIGINT');
    expect(await stack.exited).toBe(0);
    expect(stack.output()).toContain('"msg":"stopped"');
    await expectAllPortsFree(stack);
  }, 180_000);

  it('stops with exit 1, saying why, when its Temporal dev server dies', async () => {
    const stack = await startStack(false);
    const server = await run('pgrep', ['-f', `start-dev .*--port ${stack.temporalPort}( |$)`], {});
    const serverPid = Number(server.output.trim().split('\n')[0]);
    expect(Number.isInteger(serverPid) && serverPid > 0).toBe(true);

    process.kill(serverPid, 'SIGKILL');
    expect(await stack.exited).toBe(1);
    expect(stack.output()).toContain('the embedded Temporal dev server exited');
    await expectAllPortsFree(stack);
  }, 180_000);

  it('stops when the npm that started it is killed outright (kill -9)', async () => {
    const stack = await startStack(true);
    const mainPid = stackPid(stack);
    expect(mainPid).not.toBe(stack.child.pid);

    stack.child.kill('SIGKILL');
    await eventually(
      () => expect(stack.output()).toContain('npm, which started this stack, is gone'),
      {
        timeoutMs: 20_000,
      },
    );
    await eventually(() => expect(() => process.kill(mainPid, 0)).toThrow(), { timeoutMs: 30_000 });
    await expectAllPortsFree(stack);
  }, 180_000);
});
