import { eventually } from './helpers';
import {
  expectAllPortsFree,
  expectStopped,
  run,
  runScript,
  stackPid,
  startStack,
  stopDevStacks,
} from '../support/dev-stack';

// `npm start`, the way the README runs it: the whole stack in one process on embedded defaults
// (its own Temporal dev server, SQLite, simulator, SMTP sink), here on free ports and a
// throwaway data folder. `npm run demo` against it, Ctrl-C, and the ways it can die.

afterEach(stopDevStacks);

describe('npm start (the dev stack)', () => {
  it('runs the demo end to end, then stops cleanly on Ctrl-C, freeing every port', async () => {
    const stack = await startStack(false);

    const demo = await runScript('dev/demo.ts', [], stack.env);
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
    await expectStopped(stack, 0, '"msg":"stopped"');
  }, 180_000);

  it('during a warehouse outage, the demo prints the retries and links the order workflow', async () => {
    const stack = await startStack(false);
    const down = await runScript('dev/simulate.ts', ['warehouse', 'down'], stack.env);
    expect(down).toMatchObject({ code: 0, output: expect.stringContaining('down, answering 503') });

    const demo = await runScript('dev/demo.ts', [], {
      ...stack.env,
      DEMO_WAIT_SECONDS: '15',
    });
    expect(demo.code).toBe(0);
    const orderId = /Created order (\d+)/.exec(demo.output)?.[1];
    expect(demo.output).toMatch(
      /warehouse: attempt 2 of \d+ next, last: warehouse answered 503; next in \d+ s/,
    );
    expect(demo.output).toMatch(/shipment_status=not yet/);
    expect(demo.output).toContain('keeps retrying it');
    expect(demo.output).toContain(`/workflows/order-${orderId}\n`);
  }, 180_000);

  it('runs without its workers: no build of its own, the rollout left to the operator', async () => {
    const stack = await startStack(false, {}, ['--without-workers']);
    expect(stack.output()).toContain('Workers          none (--without-workers)');
    expect(stack.output()).not.toContain('worker deployment: this build is current');
    const describe = await runScript('src/cli/ops.ts', ['deployment', 'describe'], stack.env);
    expect(describe.output).toContain('No build of order-payments has polled');
    stack.child.kill('SIGINT');
    await expectStopped(stack, 0);
  }, 180_000);

  it('stops with exit 1, saying why, when its Temporal dev server dies', async () => {
    const stack = await startStack(false);
    const server = await run('pgrep', ['-f', `start-dev .*--port ${stack.temporalPort}( |$)`], {});
    const serverPid = Number(server.output.trim().split('\n')[0]);
    expect(Number.isInteger(serverPid) && serverPid > 0).toBe(true);

    process.kill(serverPid, 'SIGKILL');
    await expectStopped(stack, 1, 'the embedded Temporal dev server exited');
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
