import { main } from '../../src/cli/ops';
import { heldWorkflowIds } from '../../src/operator/partner';
import { orderWorkflowId } from '../../src/shared/order';
import { loadConfig } from '../../src/config';
import { activityDepsFromConfig, createPaymentWorker } from '../../src/workers/payments';
import { workflowBundle } from '../support/bundles';
import { createTestOrder } from '../support/orders';
import { TEST_MAIL_FROM } from '../support/stack';
import { paymentStackForTests } from '../support/dev-server-for-tests';
import { captureIo, cliEnv, eventually } from './helpers';

// `ops partner pause|resume|status` through the real CLI, on a dev server with the production
// payments worker, database and warehouse simulator.
const live = paymentStackForTests();

async function ops(...argv: string[]) {
  const io = captureIo({ env: { ...cliEnv(live.env), DATABASE_URL: live.stack.db.url } });
  const code = await main(argv, io);
  return { code, out: io.stdout(), err: io.stderr() };
}

const currentDetails = async (workflowId: string) =>
  (
    await live.env.client.workflow
      .getHandle(workflowId)
      .query<{ currentDetails?: string }>('__temporal_workflow_metadata')
  ).currentDetails ?? '';

describe('npm run ops -- partner', () => {
  it('holds new payments without calling the warehouse, shows them, and releases them at most N per second', async () => {
    live.stack.warehouse.reset();
    const paused = await ops('partner', 'pause', 'warehouse', '--reason', 'INC-42');
    expect(paused).toMatchObject({ code: 0 });
    expect(paused.out).toContain('Paused warehouse');
    const again = await ops('partner', 'pause', 'warehouse');
    expect(again.out).toMatch(/already paused by tester since/);

    const orders = await Promise.all(
      Array.from({ length: 6 }, () => createTestOrder(live.stack.orders, { totalAmount: 5400 })),
    );
    for (const [i, order] of orders.entries()) {
      await live.stack.starter.start({
        eventId: `pause-${i}-${order.id}`,
        orderId: order.id,
        amount: 5400,
      });
    }
    const ids = orders.map((o) => orderWorkflowId(o.id));
    await eventually(
      async () =>
        expect((await heldWorkflowIds(live.env.client, 'warehouse')).sort()).toEqual(
          [...ids].sort(),
        ),
      { timeoutMs: 30_000 },
    );
    expect(live.stack.warehouse.requests).toEqual([]);
    expect(await currentDetails(ids[0]!)).toMatch(
      /^waiting: warehouse paused by tester since \S+ \(INC-42\)$/,
    );

    const status = await ops('partner', 'status');
    expect(status.out).toMatch(/warehouse\s+PAUSED\s+tester\s+\S+\s+-\s+INC-42/);
    const stuck = await ops('stuck');
    expect(stuck.code).toBe(0);
    expect(stuck.out).toContain('Held by the warehouse pause: 6 run(s)');
    for (const id of ids) expect(stuck.out).toContain(id);

    const resumed = await ops('partner', 'resume', 'warehouse', '--rate', '2');
    expect(resumed).toMatchObject({ code: 0 });
    expect(resumed.out).toContain('Resumed warehouse at most 2 call(s) per second');
    expect(resumed.out).toContain('6 held order workflow(s) woken');

    for (const id of ids) {
      await expect(live.env.client.workflow.getHandle(id).result()).resolves.toMatchObject({
        processed: [{ outcome: 'fulfilled' }],
      });
    }
    // Every order once, and never more than two requests in any second.
    const times = live.stack.warehouse.requests.map((r) => Date.parse(r.at)).sort((a, b) => a - b);
    expect(live.stack.warehouse.requests.map((r) => r.orderId).sort()).toEqual(
      orders.map((o) => o.id).sort(),
    );
    for (let i = 0; i + 2 < times.length; i++) {
      expect(times[i + 2]! - times[i]!).toBeGreaterThanOrEqual(1000);
    }
    expect(await heldWorkflowIds(live.env.client, 'warehouse')).toEqual([]);
    expect((await ops('partner', 'status')).out).toMatch(
      /warehouse\s+running \(released at 2\/s\)/,
    );
  });

  it('refuses an unknown partner or a rate that is not a positive whole number (exit 2)', async () => {
    expect((await ops('partner', 'pause', 'bank')).code).toBe(2);
    expect((await ops('partner', 'resume', 'warehouse', '--rate', '0')).code).toBe(2);
    expect((await ops('partner', 'resume', 'warehouse', '--rate', '1.5')).code).toBe(2);
    expect((await ops('partner', 'status')).out).not.toMatch(/warehouse\s+PAUSED/);
  });
});

describe('a pause across a restart of the workers', () => {
  const second = paymentStackForTests({ worker: false });

  /** A payments worker as a fresh process would start one, on the stack's database. */
  async function startWorker() {
    const worker = await createPaymentWorker({
      connection: second.env.nativeConnection,
      namespace: second.env.namespace ?? 'default',
      workflowCode: (await workflowBundle()).code,
      activities: activityDepsFromConfig(
        loadConfig({ NODE_ENV: 'test', MAIL_FROM: TEST_MAIL_FROM }),
        second.stack.db,
        {
          warehouseUrl: second.stack.warehouseUrl,
          temporalUiUrl: undefined,
          smtpUrl: second.stack.smtp.url,
        },
      ),
    });
    const running = worker.run();
    return async () => {
      worker.shutdown();
      await running;
    };
  }

  it('keeps holding the order on the new workers, and releases it once resumed', async () => {
    const run = (...argv: string[]) =>
      main(argv, captureIo({ env: { ...cliEnv(second.env), DATABASE_URL: second.stack.db.url } }));
    expect(await run('partner', 'pause', 'warehouse')).toBe(0);
    const stopFirst = await startWorker();
    const order = await createTestOrder(second.stack.orders, { totalAmount: 5400 });
    await second.stack.starter.start({
      eventId: `restart-${order.id}`,
      orderId: order.id,
      amount: 5400,
    });
    const id = orderWorkflowId(order.id);
    await eventually(
      async () => expect(await heldWorkflowIds(second.env.client, 'warehouse')).toEqual([id]),
      {
        timeoutMs: 30_000,
      },
    );
    await stopFirst();

    const stopSecond = await startWorker();
    try {
      // The new worker replays the held run: still held, and the warehouse still not called.
      await second.env.client.workflow.getHandle(id).query('__temporal_workflow_metadata');
      expect(await heldWorkflowIds(second.env.client, 'warehouse')).toEqual([id]);
      expect(second.stack.warehouse.requests).toEqual([]);

      expect(await run('partner', 'resume', 'warehouse')).toBe(0);
      await expect(second.env.client.workflow.getHandle(id).result()).resolves.toMatchObject({
        processed: [{ outcome: 'fulfilled' }],
      });
      expect(second.stack.warehouse.requests.map((r) => r.orderId)).toEqual([order.id]);
    } finally {
      await stopSecond();
    }
  });
});
