import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { WorkflowFailedError } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { appEnvironment, hookedWorkerSpec } from '../../harness/process/app-processes';
import { ProcessRegistry, SupervisedProcess } from '../../harness/process/supervisor';
import type { HookMessage } from '../../harness/hooks/worker-hook';
import { startSmtpSink, type SmtpSink } from '../../harness/partners/smtp-sink';
import {
  createWarehouseSimulator,
  type WarehouseSimulator,
} from '../../harness/partners/warehouse-simulator';
import {
  createDatabase,
  createOrdersRepository,
  migrateToLatest,
  type DatabaseHandle,
} from '../../src/db';
import { PAYMENTS_TASK_QUEUE, paymentWorkflowId } from '../../src/shared/constants';
import { orderWorkflowId } from '../../src/shared/order';
import { startAlertSink, type AlertSink } from '../operations/helpers';
import { eventually } from '../support/eventually';
import { failureAlertWorkflows } from '../support/failure-alerts';
import { createTestOrder } from '../support/orders';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { uniqueEventId } from '../support/webhook';

// Issue 24, defect 2, with real worker processes and the crash-point hook (dev/chaos): three
// payment workers; the one that runs handOverToOrder's signal-with-start is SIGKILLed right
// after it, before its workflow task completes, while the warehouse rejects the order (400).
// Another worker runs the new order run at once: it fails and alerts. Seconds later the
// payment's workflow task times out and is retried, which repeats the hand-over. It must find
// the event handled: no second order run, warehouse call or alert. Which worker the server gives
// the order run's first task is its choice; when it was the frozen one, that task times out too
// and the repeated signal meets a running order run, which ignores it. So the test runs trials
// until one has the order run fail before the hand-over is repeated, and judges every trial.
const ROOT = path.resolve(__dirname, '..', '..');
const ARM = 'handOverToOrder.signal@after';
const MAX_TRIALS = 5;

let env: TestWorkflowEnvironment;
let dir: string;
let db: DatabaseHandle;
let warehouse: WarehouseSimulator;
let smtp: SmtpSink;
let sink: AlertSink;
let registry: ProcessRegistry;
let armDir: string;
const workers: SupervisedProcess[] = [];
const holds: Array<{ message: HookMessage; killed: boolean }> = [];

beforeAll(async () => {
  env = await createDevServerEnv();
  dir = mkdtempSync(path.join(tmpdir(), 'order-payments-hand-over-crash-'));
  armDir = path.join(dir, 'arm');
  mkdirSync(armDir);
  const databaseUrl = `sqlite:${path.join(dir, 'app.db')}`;
  db = createDatabase(databaseUrl, { poolMax: 2 });
  await migrateToLatest(db.db);
  warehouse = createWarehouseSimulator();
  const warehouseUrl = await warehouse.listen(0);
  smtp = await startSmtpSink();
  sink = await startAlertSink();
  const bundle = path.join(dir, 'workflow-bundle.js');
  await promisify(execFile)(
    process.execPath,
    ['--import', 'tsx', path.join(ROOT, 'src', 'workers', 'workflow-bundle.ts'), bundle],
    { cwd: ROOT },
  );
  const workerEnv = {
    ...appEnvironment({
      temporalAddress: env.address,
      namespace: env.namespace ?? 'default',
      databaseUrl,
      mailFrom: 'Order Payments <orders@test.local>',
      warehouseUrl,
      smtpUrl: smtp.url,
      invoiceDir: path.join(dir, 'invoices'),
      exportDir: path.join(dir, 'exports'),
      armDir,
      holdMs: 10_000,
    }),
    ALERT_WEBHOOK_URL: sink.url,
    WORKFLOW_BUNDLE_PATH: bundle,
  };
  registry = new ProcessRegistry(path.join(dir, 'pgids'));
  for (const name of ['worker-a', 'worker-b', 'worker-c']) {
    const worker = new SupervisedProcess(
      hookedWorkerSpec({
        name,
        entry: 'src/worker.ts',
        env: workerEnv,
        logDir: dir,
        restartDelayMs: 100,
        onControlLine: (line, process) => {
          const message = JSON.parse(line) as HookMessage;
          if (message.type !== 'hold') return;
          // Killed from this callback, while the worker is frozen at the point.
          holds.push({ message, killed: process.kill('SIGKILL', 100) });
        },
      }),
      registry,
    );
    workers.push(worker);
    worker.start();
  }
  await eventually(
    async () => {
      const queue = await env.client.workflowService.describeTaskQueue({
        namespace: env.namespace ?? 'default',
        taskQueue: { name: PAYMENTS_TASK_QUEUE },
      });
      expect(new Set(queue.pollers?.map((p) => p.identity)).size).toBe(3);
    },
    { timeoutMs: 120_000, intervalMs: 500 },
  );
}, 300_000);

afterAll(async () => {
  await Promise.all(workers.map((w) => w.stop('SIGKILL')));
  registry?.killAllSync();
  await sink?.close();
  await smtp?.close();
  await warehouse?.close();
  await db?.close();
  await env?.teardown();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** One trial: a paid order, the kill at the point; what became of it. */
async function trial() {
  const order = await createTestOrder(createOrdersRepository(db.db));
  const workflowId = orderWorkflowId(order.id);
  const eventId = uniqueEventId();
  const holdsBefore = holds.length;
  writeFileSync(path.join(armDir, ARM), '');
  const payment = await env.client.workflow.start('paymentWorkflow', {
    taskQueue: PAYMENTS_TASK_QUEUE,
    workflowId: paymentWorkflowId(eventId),
    args: [{ eventId, orderId: order.id, amount: 5400 }],
    workflowExecutionTimeout: '2 minutes',
  });
  await eventually(() => expect(holds.length).toBe(holdsBefore + 1), {
    timeoutMs: 60_000,
    intervalMs: 100,
  });
  const orderRun = env.client.workflow.getHandle(workflowId);
  await expect(orderRun.result()).rejects.toBeInstanceOf(WorkflowFailedError);
  const failed = await orderRun.describe();
  const orderHistory = await env.client.workflow.getHandle(workflowId, failed.runId).fetchHistory();
  // The repeated hand-over runs before the payment completes: a second order run, had it been
  // started, is there by now, and `latest` below would name it.
  await payment.result();
  const paymentHistory = await payment.fetchHistory();
  return {
    hold: holds[holdsBefore]!,
    /** The hand-over was repeated after the order run had already failed. */
    repeatedAfterFailure: !orderHistory.events?.some((e) => e.workflowTaskTimedOutEventAttributes),
    paymentTaskLost: paymentHistory.events?.some((e) => e.workflowTaskTimedOutEventAttributes),
    latest: await env.client.workflow.getHandle(workflowId).describe(),
    failedRunId: failed.runId,
    warehouseCalls: warehouse.requests.filter((r) => r.orderId === order.id).length,
    alerts: (await failureAlertWorkflows(env.client, workflowId)).length,
  };
}

it('fails the order once, with one warehouse call and one alert, and keeps that run retryable', async () => {
  warehouse.setMode({ kind: 'reject', status: 400 });
  let reached = 0;
  for (let i = 0; i < MAX_TRIALS && reached === 0; i++) {
    const result = await trial();
    expect(result.hold).toMatchObject({ killed: true, message: { point: ARM, local: true } });
    expect(result.paymentTaskLost).toBe(true);
    expect(result.latest).toMatchObject({ runId: result.failedRunId, status: { name: 'FAILED' } });
    expect(result.warehouseCalls).toBe(1);
    expect(result.alerts).toBe(1);
    if (result.repeatedAfterFailure) reached += 1;
  }
  expect(reached).toBe(1);
}, 240_000);
