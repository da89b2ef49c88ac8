import { randomUUID } from 'node:crypto';
import { setTimeout as delay } from 'node:timers/promises';
import { ScheduleOverlapPolicy } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { createAlertActivities } from '../../src/activities/alert-activities';
import { createSlaActivities } from '../../src/activities/sla-activities';
import { createOrdersRepository, createPartnerPausesRepository } from '../../src/db';
import {
  slaIncidentWorkflowId,
  slaPostWorkflowId,
  type SlaCause,
  type SlaCheck,
} from '../../src/shared/sla';
import { ensureSlaCheckSchedule, SLA_CHECK_SCHEDULE_ID } from '../../src/temporal/schedules';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';
import { startAlertSink, type AlertSink } from '../support/alert-sink';
import { sdkLogEntries } from '../support/sdk-logs';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import { bundledWorker, workflowBundle } from '../support/bundles';

// Issue 27 point 3: work that waits too long alerts once and resolves once, at a sink that keeps
// one alert per Idempotency-Key (the raw requests are counted too). A dev server, for the
// visibility query of the payment SLA; the checks are started by hand, one per "minute".
let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;
let db: TestDatabaseHandle;
let sink: AlertSink;

beforeAll(async () => {
  [env, bundle, db] = await Promise.all([
    createDevServerEnv(),
    workflowBundle(),
    testDatabases[0]!.create(),
  ]);
  sink = await startAlertSink({ keyRequired: true });
});
afterAll(async () => {
  await sink?.close();
  await env?.teardown();
  await db?.close();
});

const postsOf = (cause: SlaCause) => sink.keptUnder(`${slaIncidentWorkflowId(cause)}-`);
const requestsOf = (cause: SlaCause) => sink.receivedUnder(`${slaIncidentWorkflowId(cause)}-`);

async function until(what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(100);
  }
}

/** A worker with the SLA check's activities and the alert delivery (to the sink, or the log). */
async function slaWorker(taskQueue: string, webhook: string | undefined, paymentMs = 60 * 60_000) {
  return bundledWorker(env, bundle, taskQueue, {
    ...createAlertActivities({ alertWebhookUrl: webhook, temporalUiUrl: 'http://ui.test' }),
    ...createSlaActivities({
      client: env.client,
      orders: createOrdersRepository(db.db),
      partnerPauses: createPartnerPausesRepository(db.db),
      sla: { fulfilmentMs: 60_000, paymentMs },
    }),
  });
}

/** One run of the scheduled check, to its end (the incident then decides on its own). */
async function check(taskQueue: string): Promise<void> {
  await env.client.workflow.execute('slaCheckWorkflow', {
    taskQueue,
    workflowId: `sla-check-${randomUUID()}`,
  });
}

/** The newest check the incident workflow of a cause took in (its last signal). */
async function incidentChecks(cause: SlaCause): Promise<number> {
  const history = await env.client.workflow.getHandle(slaIncidentWorkflowId(cause)).fetchHistory();
  return (history.events ?? []).filter((e) => e.workflowExecutionSignaledEventAttributes).length;
}

it('alerts once for a paid order not handed over in time, says it is paused, and resolves once', async () => {
  const taskQueue = `sla-${randomUUID()}`;
  const orders = createOrdersRepository(db.db);
  const pauses = createPartnerPausesRepository(db.db);
  const created = await orders.createWithIdempotencyKey({
    userId: 1,
    customerEmail: 'late@example.com',
    totalAmount: 1200,
  });
  const orderId = created.order.id;
  // Paid two minutes ago (the SLA here is one), never handed to the warehouse.
  const paidAt = new Date(Date.now() - 120_000).toISOString();
  await db.db
    .updateTable('orders')
    .set({ status: 'paid', updated_at: paidAt })
    .where('id', '=', orderId)
    .execute();
  // One paid just now is not late yet.
  const fresh = await orders.createWithIdempotencyKey({
    userId: 2,
    customerEmail: 'fresh@example.com',
    totalAmount: 1200,
  });
  await db.db
    .updateTable('orders')
    .set({ status: 'paid' })
    .where('id', '=', fresh.order.id)
    .execute();
  await pauses.pause('warehouse', 'test', 'carrier strike');

  const worker = await slaWorker(taskQueue, sink.url);
  await worker.runUntil(async () => {
    await check(taskQueue);
    await until('the opened post', () => postsOf('FulfilmentSlaBreached').length === 1);
    const [opened] = postsOf('FulfilmentSlaBreached');
    const sla = opened!.body.alert.sla as {
      checked_at: string;
      count: number;
      order_ids: number[];
    };
    expect(opened!.key).toBe(slaPostWorkflowId('FulfilmentSlaBreached', sla.checked_at, 'opened'));
    expect(opened!.body.alert.kind).toBe('sla_breached');
    expect(sla.count).toBe(1);
    expect(sla.order_ids).toEqual([orderId]);
    expect(opened!.body.text).toContain('paused: warehouse');
    expect(opened!.body.text).toContain(`Orders: ${orderId}`);
    expect(opened!.body.text).toContain('Run: `npm run ops -- stuck --type orderWorkflow`');
    expect(opened!.body.alert.command).toBe('npm run ops -- stuck --type orderWorkflow');
    const link = String(opened!.body.alert.web_ui_url);
    expect(link).toMatch(/^http:\/\/ui\.test\/namespaces\/default\/workflows\?query=/);
    expect(decodeURIComponent(link)).toContain(`WorkflowId IN ("order-${orderId}")`);

    // Still late at the next two checks: the incident takes them in and posts nothing.
    await check(taskQueue);
    await check(taskQueue);
    await until(
      'both checks taken in',
      async () => (await incidentChecks('FulfilmentSlaBreached')) === 3,
    );
    await delay(500);
    expect(requestsOf('FulfilmentSlaBreached')).toHaveLength(1);

    // Handed over: the next check finds none, and the incident resolves and ends.
    await pauses.resume('warehouse');
    await orders.setShipmentStatus(orderId, 'requested');
    await db.db
      .updateTable('orders')
      .set({ shipment_status: 'requested' })
      .where('id', '=', fresh.order.id)
      .execute();
    await check(taskQueue);
    await env.client.workflow.getHandle(slaIncidentWorkflowId('FulfilmentSlaBreached')).result();
    await until('the resolved post', () => postsOf('FulfilmentSlaBreached').length === 2);
    const resolved = postsOf('FulfilmentSlaBreached')[1]!;
    expect(resolved.key).toBe(
      slaPostWorkflowId('FulfilmentSlaBreached', sla.checked_at, 'resolved'),
    );
    expect(resolved.body.alert.kind).toBe('sla_resolved');
    expect(resolved.body.text).toContain('Run: `npm run ops -- stuck --type orderWorkflow`');
    expect(resolved.body.alert.web_ui_url).toMatch(/^http:\/\/ui\.test\//);

    // Clear checks after that open nothing and post nothing.
    await check(taskQueue);
    await delay(500);
    expect(requestsOf('FulfilmentSlaBreached')).toHaveLength(2);
  });
});

it('alerts, in log-only mode with link and command, for a payment workflow running too long', async () => {
  const taskQueue = `sla-${randomUUID()}`;
  // A payment workflow whose worker is absent: nobody polls its queue, so it runs forever.
  const stuck = await env.client.workflow.start('paymentWorkflow', {
    taskQueue: `absent-${randomUUID()}`,
    workflowId: `payment-stuck-${randomUUID()}`,
    args: [{}],
  });
  const worker = await slaWorker(taskQueue, undefined, 1000);
  await worker.runUntil(async () => {
    await until('the payment workflow to be late and visible', async () => {
      const { count } = await env.client.workflow.count(
        `WorkflowType = 'paymentWorkflow' AND ExecutionStatus = 'Running' AND StartTime < '${new Date(Date.now() - 1000).toISOString()}'`,
      );
      return count > 0;
    });
    await check(taskQueue);
    const logged = () =>
      sdkLogEntries().filter(
        (e) =>
          e.message.startsWith('alert (log only') && e.meta?.failure_type === 'PaymentSlaBreached',
      );
    await until('the opened alert in the log', () => logged().length === 1);
    const opened = logged()[0]!;
    expect(opened.meta?.kind).toBe('sla_breached');
    expect(String(opened.meta?.text)).toContain(
      'Run: `npm run ops -- stuck --type paymentWorkflow`',
    );
    expect(decodeURIComponent(String(opened.meta?.web_ui_url))).toContain(`"${stuck.workflowId}"`);
    expect((opened.meta?.sla as Pick<SlaCheck, 'count'>).count).toBe(1);

    await stuck.terminate('test over');
    await until('the payment workflow gone from the running ones', async () => {
      const { count } = await env.client.workflow.count(
        `WorkflowType = 'paymentWorkflow' AND ExecutionStatus = 'Running'`,
      );
      return count === 0;
    });
    await check(taskQueue);
    await env.client.workflow.getHandle(slaIncidentWorkflowId('PaymentSlaBreached')).result();
    await until('the resolved alert in the log', () => logged().length === 2);
    const resolved = logged()[1]!;
    expect(resolved.meta?.kind).toBe('sla_resolved');
    expect(String(resolved.meta?.text)).toContain('Open in Temporal Web UI');
    expect(resolved.meta?.command).toBe('npm run ops -- stuck --type paymentWorkflow');
  });
});

it('is started every minute by the sla-check schedule, created once however often it is ensured', async () => {
  const taskQueue = `sla-${randomUUID()}`;
  const scheduleId = `${SLA_CHECK_SCHEDULE_ID}-${randomUUID()}`;
  const handle = env.client.schedule.getHandle(scheduleId);
  try {
    const results = await Promise.all([
      ensureSlaCheckSchedule(env.client, { scheduleId, taskQueue }),
      ensureSlaCheckSchedule(env.client, { scheduleId, taskQueue }),
    ]);
    expect(results.map((r) => r.created).sort()).toEqual([false, true]);
    const described = await handle.describe();
    expect(described.spec.intervals).toMatchObject([{ every: 60_000 }]);
    expect(described.policies).toEqual({
      overlap: ScheduleOverlapPolicy.SKIP,
      catchupWindow: 60_000,
      pauseOnFailure: false,
    });
    expect(described.action).toMatchObject({ workflowType: 'slaCheckWorkflow', taskQueue });
    // A run it starts checks: nothing is late here any more, so it completes and posts nothing.
    const worker = await slaWorker(taskQueue, sink.url);
    const before = sink.received.length;
    await worker.runUntil(async () => {
      await handle.trigger();
      await until('a scheduled check to complete', async () => {
        const { count } = await env.client.workflow.count(
          `TemporalScheduledById = '${scheduleId}' AND ExecutionStatus = 'Completed'`,
        );
        return count > 0;
      });
    });
    expect(sink.received.length).toBe(before);
  } finally {
    await handle.delete();
  }
});

describe.each(testDatabases)('paidAwaitingShipment on $name', ({ create }) => {
  it('counts paid orders with no shipment request last changed before the cut-off, oldest first', async () => {
    const handle = await create();
    try {
      const orders = createOrdersRepository(handle.db);
      const at = (minutesAgo: number) => new Date(Date.now() - minutesAgo * 60_000).toISOString();
      const make = async (status: 'pending' | 'paid', minutesAgo: number, shipped = false) => {
        const { order } = await orders.createWithIdempotencyKey({
          userId: 1,
          customerEmail: 'a@example.com',
          totalAmount: 100,
        });
        await handle.db
          .updateTable('orders')
          .set({
            status,
            updated_at: at(minutesAgo),
            shipment_status: shipped ? 'requested' : null,
          })
          .where('id', '=', order.id)
          .execute();
        return order.id;
      };
      const late = [await make('paid', 90), await make('paid', 120), await make('paid', 61)];
      await make('paid', 30); // not late yet
      await make('pending', 120); // not paid
      await make('paid', 120, true); // handed over
      const found = await orders.paidAwaitingShipment(at(60), 2);
      expect(found).toEqual({ count: 3, ids: [late[1], late[0]] });
    } finally {
      await handle.close();
    }
  });
});
