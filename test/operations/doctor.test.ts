import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { main as ops } from '../../src/cli/ops';
import { createPartnerPausesRepository } from '../../src/db';
import { HEAVY_TASK_QUEUE, PAYMENTS_TASK_QUEUE } from '../../src/shared/constants';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../../src/shared/search-attributes';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';
import { workflowBundle } from '../support/bundles';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { startPartners, type Partners } from '../support/stack';
import { readDoctorReport, untilTheDoctorCanTell } from '../support/doctor';
import { eventually } from './helpers';

// `npm run ops -- doctor` against real dev servers and fresh databases: each check turns FAIL when what
// it checks is broken, and the exit code says whether anything failed.
const sqlite = testDatabases.find((d) => d.name === 'sqlite')!;
let withAttributes: TestWorkflowEnvironment;
let withoutAttributes: TestWorkflowEnvironment;
let migrated: TestDatabaseHandle;
let unmigrated: TestDatabaseHandle;
let workflowCode: string;
let partners: Partners;
const stops: Array<() => Promise<void>> = [];

beforeAll(async () => {
  [withAttributes, withoutAttributes, migrated, unmigrated, { code: workflowCode }] =
    await Promise.all([
      createDevServerEnv({ searchAttributes: [...CUSTOM_SEARCH_ATTRIBUTES] }),
      createDevServerEnv({ searchAttributes: [] }),
      sqlite.create(),
      sqlite.create({ migrate: false }),
      workflowBundle({ interceptorModules: [] }),
    ]);
  partners = await startPartners();
});
afterAll(async () => {
  for (const stop of stops) await stop();
  await Promise.all([migrated?.close(), unmigrated?.close(), partners?.close()]);
  await Promise.all([withAttributes?.teardown(), withoutAttributes?.teardown()]);
});

/** Asked again while a check could not tell (UNKNOWN: a call out of time under load). */
function doctor(env: NodeJS.ProcessEnv, argv: string[] = []) {
  return untilTheDoctorCanTell(async () => {
    const out: string[] = [];
    const err: string[] = [];
    const code = await ops(['doctor', ...argv], {
      out: (t) => out.push(t),
      err: (t) => err.push(t),
      env,
    });
    return { ...readDoctorReport(code, out.join('\n')), err: err.join('\n') };
  });
}

/** Each check named has the status given. */
function expectStatuses(report: { status(check: string): string | undefined }, want: object) {
  const checks = Object.keys(want);
  expect(Object.fromEntries(checks.map((c) => [c, report.status(c)]))).toEqual(want);
}

function settings(server: TestWorkflowEnvironment, db: TestDatabaseHandle): NodeJS.ProcessEnv {
  return {
    NODE_ENV: 'development',
    TEMPORAL_ADDRESS: server.address,
    TEMPORAL_NAMESPACE: server.namespace ?? 'default',
    DATABASE_URL: db.url,
    WAREHOUSE_API_URL: partners.warehouseUrl,
    SMTP_URL: partners.smtpUrl,
  };
}

/** Production, with a real webhook secret and alert hook, on the migrated database. */
function production(): NodeJS.ProcessEnv {
  return {
    NODE_ENV: 'production',
    DATABASE_URL: migrated.url,
    PAYMENT_WEBHOOK_SECRET: 'a-real-provider-secret-0123456789',
    ALERT_WEBHOOK_URL: 'https://hooks.example.com/alerts',
  };
}

async function startWorker(server: TestWorkflowEnvironment, taskQueue: string) {
  const worker = await Worker.create({
    connection: server.nativeConnection,
    namespace: server.namespace ?? 'default',
    taskQueue,
    workflowBundle: { code: workflowCode },
    activities: { noop: () => Promise.resolve() },
  });
  const running = worker.run();
  stops.push(async () => {
    worker.shutdown();
    await running;
  });
}

describe('npm run ops -- doctor', () => {
  it('fails (exit 1) on every task queue no worker polls', async () => {
    const report = await doctor(settings(withAttributes, migrated));
    expectStatuses(report, {
      'workers: payments': 'FAIL',
      'workers: heavy': 'FAIL',
      'search attributes': 'OK',
      migrations: 'OK',
    });
    expect(report.line('workers: payments')).toContain('npm run worker');
    expect(report.code).toBe(1);
  });

  it('passes (exit 0) with every check OK when workers poll, attributes are registered and the DB is migrated', async () => {
    await startWorker(withAttributes, PAYMENTS_TASK_QUEUE);
    await startWorker(withAttributes, HEAVY_TASK_QUEUE);
    const report = await doctor(settings(withAttributes, migrated));
    const checks = [
      'configuration',
      'database engine',
      'alerts',
      'database',
      'migrations',
      'warehouse',
      'smtp',
      'temporal',
      'namespace',
      'search attributes',
      'workers: payments',
      'backlog: payments',
      'workers: heavy',
      'backlog: heavy',
    ];
    expect(checks.map((c) => [c, report.status(c)])).toEqual(checks.map((c) => [c, 'OK']));
    expect(report.line('workers: payments')).toMatch(/1 polling: \d+@\S+ \(\d+ s ago\)/);
    expect(report.line('temporal')).toContain(`server 1.`);
    expect(report.text).toContain('All checks OK.');
    expect(report.code).toBe(0);
  });

  it('warns (exit 0) while a partner is paused, saying who paused it, since when, and how to resume', async () => {
    const pauses = createPartnerPausesRepository(migrated.db);
    await pauses.pause('warehouse', 'alice', 'warehouse outage INC-7');
    try {
      const report = await doctor(settings(withAttributes, migrated));
      expect(report.status('partner paused: warehouse')).toBe('WARN');
      expect(report.line('partner paused: warehouse')).toMatch(
        /paused by alice since \S+ \(warehouse outage INC-7\).*npm run ops -- partner resume warehouse --rate N/,
      );
      expect(report.code).toBe(0);
    } finally {
      await pauses.resume('warehouse');
    }
    expect((await doctor(settings(withAttributes, migrated))).text).not.toContain('partner paused');
  });

  it('fails (exit 1) when the database lacks migrations, naming them and the command', async () => {
    const report = await doctor(settings(withAttributes, unmigrated));
    expectStatuses(report, { database: 'OK', migrations: 'FAIL', 'workers: payments': 'OK' });
    expect(report.line('migrations')).toContain('0001_create_orders_and_payments');
    expect(report.text).toMatch(/To fix:\n {2}npm run migrate/);
    expect(report.code).toBe(1);
  });

  it('fails (exit 1) when the custom search attributes are not registered, printing the commands', async () => {
    const report = await doctor(settings(withoutAttributes, migrated));
    expect(report.status('search attributes')).toBe('FAIL');
    expect(report.line('search attributes')).toContain('OrderId');
    expect(report.text).toContain(
      'temporal operator search-attribute create --namespace default --name OrderId --type Int',
    );
    expect(report.text).toContain(
      'temporal operator search-attribute create --namespace default --name PaymentEventId --type Keyword',
    );
    expect(report.code).toBe(1);
  });

  it('warns about a backlog above the threshold', async () => {
    for (let i = 0; i < 3; i++) {
      await withoutAttributes.client.workflow.start('paymentWorkflow', {
        taskQueue: PAYMENTS_TASK_QUEUE,
        workflowId: `doctor-backlog-${i}`,
        args: [{ eventId: `evt-${i}`, orderId: 1, amount: 1 }],
      });
    }
    // The server's statistics are approximate and catch up within a second or so.
    await eventually(async () => {
      const report = await doctor(settings(withoutAttributes, migrated), ['--backlog-warn', '2']);
      expect(report.status('backlog: payments')).toBe('WARN');
      expect(report.line('backlog: payments')).toContain('3 task(s) waiting');
      expect(report.status('backlog: heavy')).toBe('OK');
    });
  });

  it('fails (exit 1) while the warehouse is down', async () => {
    partners.warehouse.setMode({ kind: 'unavailable', status: 503 });
    try {
      const down = await doctor(settings(withAttributes, migrated));
      expectStatuses(down, { warehouse: 'FAIL', smtp: 'OK' });
      expect(down.line('warehouse')).toContain('/v1/health answered 503');
      expect(down.line('smtp')).toMatch(/greets: 220 /);
      expect(down.code).toBe(1);
    } finally {
      partners.warehouse.setMode({ kind: 'ok' });
    }
  });

  it.each([
    {
      check: 'smtp',
      env: { SMTP_URL: 'smtp://127.0.0.1:1' },
      says: 'smtp://127.0.0.1:1',
      other: ['warehouse', 'OK'],
    },
    {
      check: 'temporal',
      env: { TEMPORAL_ADDRESS: '127.0.0.1:1' },
      says: 'unreachable: nothing listens on 127.0.0.1:1',
      // What depends on Temporal is skipped.
      other: ['search attributes', 'SKIP'],
    },
  ])(
    'fails (exit 1) when nothing answers at the $check address',
    async ({ check, env, says, other }) => {
      const report = await doctor({ ...settings(withAttributes, migrated), ...env });
      expect(report.status(check)).toBe('FAIL');
      expect(report.line(check)).toContain(says);
      expect(report.status(other[0]!)).toBe(other[1]);
      expect(report.code).toBe(1);
    },
  );

  it('prints a configuration error whole, however long', async () => {
    const report = await doctor(production());
    expect(report.status('configuration')).toBe('FAIL');
    for (const message of [
      'the embedded dev server is for development only',
      'the local SMTP sink is for development only',
      'the warehouse simulator is for development only',
    ]) {
      expect(report.text).toMatch(new RegExp(`^ {2}configuration \\(FAIL\\): .*${message}`, 'm'));
    }
  });

  it('fails the configuration of production without TEMPORAL_ADDRESS (the embedded dev server)', async () => {
    const report = await doctor({
      ...production(),
      SMTP_URL: 'smtp://mail.example.com:587',
      WAREHOUSE_API_URL: 'https://warehouse.example.com',
    });
    // The rest is still checked, read under the development rules.
    expectStatuses(report, {
      configuration: 'FAIL',
      temporal: 'SKIP',
      migrations: 'OK',
      'database engine': 'WARN',
    });
    expect(report.line('configuration')).toContain('TEMPORAL_ADDRESS');
    expect(report.code).toBe(1);
  });

  it('looks for the dev server of npm start on TEMPORAL_DEV_PORT when TEMPORAL_ADDRESS is unset', async () => {
    const port = Number(withAttributes.address.split(':').at(-1));
    const { TEMPORAL_ADDRESS: _unset, ...embedded } = settings(withAttributes, migrated);
    const report = await doctor({ ...embedded, TEMPORAL_DEV_PORT: String(port) });
    expect(report.line('configuration')).toContain(
      `embedded dev server (npm start) at 127.0.0.1:${port}`,
    );
    expectStatuses(report, { temporal: 'OK', 'search attributes': 'OK' });
  });

  it('warns that the codec endpoint is not served when encryption is on without a token off loopback', async () => {
    const key = `k1:${Buffer.alloc(32, 3).toString('base64')}`;
    const base = { ...settings(withAttributes, migrated), PAYLOAD_ENCRYPTION_KEY: key };
    const open = await doctor({ ...base, HOST: '0.0.0.0' });
    expect(open.status('codec endpoint')).toBe('WARN');
    expect(open.line('codec endpoint')).toContain('HOST=0.0.0.0 is not loopback');
    const local = await doctor(base);
    expect(local.line('codec endpoint')).toContain('served on loopback only');
  });

  it('refuses a wrong command line with exit 2', async () => {
    const report = await doctor(settings(withAttributes, migrated), ['--backlog-warn', 'lots']);
    expect(report.code).toBe(2);
    expect(report.err).toContain('--backlog-warn must be a whole number of 0 or more');
  });
});
