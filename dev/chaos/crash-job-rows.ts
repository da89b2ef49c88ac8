import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { WorkflowHandle } from '@temporalio/client';
import {
  createOrdersRepository,
  createPaymentsRepository,
  createUnmatchedRepository,
} from '../../src/db';
import {
  HEAVY_TASK_QUEUE,
  PAYMENTS_TASK_QUEUE,
  paymentWorkflowId,
} from '../../src/shared/constants';
import { EXPORT_FILE, EXPORT_INDEX_FILE, exportWorkflowId } from '../../src/shared/export';
import { slaIncidentWorkflowId } from '../../src/shared/sla';
import { noOrderCounts, type PreparedScenario } from './crash-counts';
import { createOrder, deliver } from './crash-events';
import { mayDuplicateAlert } from './crash-judge';
import type { Stack } from './crash-stack';

/**
 * The scenarios about no single order's fulfilment: an export, a stock aggregation, an SLA
 * incident, a payment for an unknown order. `n` is the row's number, for a slot or an ID no other
 * row takes.
 */

export async function prepareExport(stack: Stack, tag: string): Promise<PreparedScenario> {
  const exportId = `crash-${tag}`;
  const orders = await stack.db.db
    .selectFrom('orders')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .executeTakeFirstOrThrow();
  const total = Number(orders.n);
  const dir = path.join(stack.dataDir, 'exports', exportId);
  return {
    trigger: () =>
      stack.client.workflow.start('exportOrdersWorkflow', {
        taskQueue: HEAVY_TASK_QUEUE,
        workflowId: exportWorkflowId(exportId),
        // Two chunks at least, so a chunk's crash is followed by another chunk.
        args: [{ exportId, chunkSize: Math.max(1, Math.ceil(total / 2)) }],
      }),
    count: async () => {
      const csv = existsSync(path.join(dir, EXPORT_FILE))
        ? readFileSync(path.join(dir, EXPORT_FILE), 'utf8').split('\r\n').filter(Boolean)
        : [];
      const ids = csv.slice(1).map((line) => line.split(',')[0]);
      return {
        ...noOrderCounts(),
        extra: `rows ${ids.length}/${total}, distinct ${new Set(ids).size}, index ${existsSync(path.join(dir, EXPORT_INDEX_FILE)) ? 'yes' : 'no'}`,
      };
    },
    judge: (counts) => {
      const want = `rows ${total}/${total}, distinct ${total}, index yes`;
      return counts.extra === want ? [] : [`${counts.extra}, expected ${want}`];
    },
  };
}

export async function prepareStock(
  stack: Stack,
  tag: string,
  n: number,
): Promise<PreparedScenario> {
  // A slot of its own per run: a minute in the past that no other run names.
  const scheduledAt = new Date(Date.UTC(2020, 0, 1) + n * 60_000).toISOString();
  return {
    trigger: () =>
      stack.client.workflow.start('aggregateStockWorkflow', {
        taskQueue: PAYMENTS_TASK_QUEUE,
        workflowId: `crash-stock-${tag}`,
        args: [{ scheduledAt }],
      }),
    count: async () => {
      const rows = await stack.db.db.selectFrom('stock_snapshots').select(['taken_at']).execute();
      const same = rows.filter((r) => new Date(String(r.taken_at)).toISOString() === scheduledAt);
      return { ...noOrderCounts(), extra: `snapshots ${same.length}` };
    },
    judge: (counts) => (counts.extra === 'snapshots 1' ? [] : [`${counts.extra}, expected 1`]),
  };
}

/**
 * An order paid in 2020 and never handed over: the first SLA check (the trigger) opens the
 * FulfilmentSlaBreached incident, then the order is handed over and a second check resolves it,
 * so the incident ends and the run settles. Whatever the crash, the sink got one "opened" and one
 * "resolved" post (two copies of one only in the alert's documented window).
 */
export async function prepareSla(stack: Stack, tag: string): Promise<PreparedScenario> {
  const order = await createOrder(stack, tag);
  await stack.db.db
    .updateTable('orders')
    .set({ status: 'paid', updated_at: '2020-01-01T00:00:00.000Z' })
    .where('id', '=', order.id)
    .execute();
  const alertsBefore = stack.alerts.length;
  const check = (n: number) =>
    stack.client.workflow.start('slaCheckWorkflow', {
      taskQueue: PAYMENTS_TASK_QUEUE,
      workflowId: `crash-sla-${tag}-${n}`,
    });
  let first: WorkflowHandle | undefined;
  let second: WorkflowHandle | undefined;
  return {
    trigger: async () => (first = await check(1)),
    afterHit: async () => {
      await first?.result();
      await createOrdersRepository(stack.db.db).setShipmentStatus(order.id, 'requested');
      second = await check(2);
      await second.result();
      // The incident ends with its resolved post (which it waits for).
      await stack.client.workflow
        .getHandle(slaIncidentWorkflowId('FulfilmentSlaBreached'))
        .result();
    },
    root: async () => second ?? first!,
    count: async () => {
      const posts = stack.alerts
        .slice(alertsBefore)
        .filter((a) =>
          a.idempotencyKey?.startsWith(`${slaIncidentWorkflowId('FulfilmentSlaBreached')}-`),
        );
      const copies = (kind: string) => posts.filter((a) => a.kind === kind).length;
      const keys = new Set(posts.map((a) => a.idempotencyKey)).size;
      return {
        ...noOrderCounts(),
        alerts: posts.length,
        extra: `opened x${copies('sla_breached')}, resolved x${copies('sla_resolved')}, keys ${keys}`,
      };
    },
    judge: (counts, run) => {
      const once = 'opened x1, resolved x1, keys 2';
      // A crash between the sink's 2xx and the stamp repeats that one post (docs/exactly-once.md).
      const again = ['opened x2, resolved x1, keys 2', 'opened x1, resolved x2, keys 2'];
      if (counts.extra === once) return [];
      if (mayDuplicateAlert(run, stack.fault) && again.includes(counts.extra)) return [];
      return [`${counts.extra}, expected ${once}`];
    },
  };
}

/**
 * A payment for an order no run creates: the step that finds no order keeps the event in the
 * unmatched inbox, in the transaction the crash interrupts. Whatever the crash, the inbox holds
 * one entry counted once (the retry is the same run: its own entry, not a redelivery), no
 * payment row exists, and the run completed telling `created` (it, or its retry, kept it).
 */
export async function prepareUnknownOrder(
  stack: Stack,
  tag: string,
  n: number,
): Promise<PreparedScenario> {
  // Far above any ID the stack's orders take, and a fresh one per run.
  const orderId = UNKNOWN_ORDER_ID_BASE + n;
  const eventId = `evt_crash_${tag}_unknown`;
  return {
    trigger: () => deliver(stack, eventId, orderId),
    count: async () => {
      const entry = await createUnmatchedRepository(stack.db.db).findByEventId(eventId);
      const payments = await createPaymentsRepository(stack.db.db).countByEventId(eventId);
      const handle = stack.client.workflow.getHandle(paymentWorkflowId(eventId));
      const status = (await handle.describe()).status.name;
      const result = status === 'COMPLETED' ? await handle.result() : undefined;
      const told = (result as { kind?: string; created?: boolean } | undefined) ?? {};
      return {
        ...noOrderCounts(),
        payments,
        extra: unknownOrderExtra({
          entry: entry ? `${entry.reason} x${entry.deliveryCount}` : 'none',
          status,
          result: told.kind ? `${told.kind}${told.created ? ' created' : ''}` : 'none',
        }),
      };
    },
    judge: (counts) => {
      const want = unknownOrderExtra({
        entry: 'unknown_order x1',
        status: 'COMPLETED',
        result: 'unmatched created',
      });
      return [
        ...(counts.payments === 0 ? [] : [`payments ${counts.payments}, expected 0`]),
        ...(counts.extra === want ? [] : [`${counts.extra}, expected ${want}`]),
      ];
    },
  };
}

const UNKNOWN_ORDER_ID_BASE = 1_900_000_000;

function unknownOrderExtra(o: { entry: string; status: string; result: string }): string {
  return `inbox ${o.entry}, run ${o.status}, result ${o.result}`;
}
