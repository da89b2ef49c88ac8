import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import fs from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import {
  createLoyaltyRepository,
  createOrdersRepository,
  createPaymentsRepository,
} from '../../src/db';
import { signBody } from '../../src/http/signature';
import { PAYMENT_WEBHOOK_PATH } from '../../src/http/routes/payment-webhook';
import { confirmationMessageId } from '../../src/mail/order-confirmation';
import { PAYMENT_SUCCEEDED_EVENT, paymentWorkflowId } from '../../src/shared/constants';
import { gatherEvidence, type PlannedOrder } from '../chaos/evidence';
import { checkInvariants, type Disruption } from '../chaos/invariants';
import { deliverEvent, emptyDeliveryStats, type PaymentEvent } from '../chaos/provider';
import { createRandom } from '../chaos/random';
import { FRONTEND_SERVER_NAME } from './certs';
import type { ServiceName } from './config';
import { MAIL_FROM, startAppStack, WEBHOOK_SECRET, type AppStack } from './app-stack';

/**
 * Conformance on a real multi-service Temporal server (npm run test:cluster): frontend, history,
 * matching and worker as separate processes on PostgreSQL, 4 shards, mTLS; the app as its own
 * processes, connected through the TEMPORAL_* variables only. No time skipping: every wait is
 * the server's own.
 */

const ROOT = path.resolve(__dirname, '..', '..');
const log = (line: string) => process.stderr.write(`[cluster-test] ${line}\n`);

let stack: AppStack;
let root: string;
let nextOrder = 1;

beforeAll(async () => {
  root = mkdtempSync(path.join(tmpdir(), 'order-payments-cluster-'));
  // PostgreSQL runs as its own user and must reach its directory under this one.
  chmodSync(root, 0o755);
  stack = await startAppStack(root, log);
}, 600_000);

afterAll(async () => {
  await stack?.stop();
  if (process.env.CLUSTER_TEST_KEEP) log(`kept ${root}`);
  else if (root) rmSync(root, { recursive: true, force: true });
}, 120_000);

async function createOrder(amount = 5400): Promise<{ id: number; userId: number }> {
  const userId = 1000 + nextOrder;
  const { order } = await createOrdersRepository(stack.db.db).createWithIdempotencyKey({
    userId,
    customerEmail: `customer${userId}@example.com`,
    totalAmount: amount,
    idempotencyKey: `cluster-${process.pid}-${nextOrder++}`,
  });
  return { id: order.id, userId };
}

async function postWebhook(event: PaymentEvent): Promise<{ status: number; body: string }> {
  const raw = JSON.stringify({
    id: event.id,
    event: PAYMENT_SUCCEEDED_EVENT,
    order_id: event.orderId,
    amount: event.amount,
  });
  const response = await fetch(new URL(PAYMENT_WEBHOOK_PATH, stack.baseUrl), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-payment-signature': signBody(raw, WEBHOOK_SECRET),
    },
    body: raw,
  });
  return { status: response.status, body: await response.text() };
}

async function eventually(what: string, check: () => Promise<boolean>, timeoutMs: number) {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) {
      throw new Error(`${what} did not happen within ${timeoutMs / 1000}s; logs: ${stack.logDir}`);
    }
    await delay(500);
  }
}

async function orderDone(orderId: number): Promise<boolean> {
  const order = await createOrdersRepository(stack.db.db).findById(orderId);
  return Boolean(
    order?.status === 'paid' &&
    order.shipmentStatus === 'requested' &&
    order.confirmationSentAt &&
    (await fs.readdir(stack.invoiceDir).catch((): string[] => [])).includes(`order-${orderId}.pdf`),
  );
}

function shipmentsFor(orderId: number) {
  return [...stack.warehouse.shipments.values()].filter((s) => s.orderId === orderId);
}
function warehouseStatusesFor(orderId: number) {
  return stack.warehouse.requests.filter((r) => Number(r.orderId) === orderId);
}
function mailsFor(orderId: number) {
  const id = confirmationMessageId(orderId, MAIL_FROM);
  return stack.smtp.messages.filter((m) => m.messageId === id);
}

async function ops(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'src/cli/ops.ts', ...args],
      { cwd: ROOT, env: stack.env, timeout: 120_000 },
    );
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

test('the frontend refuses a client without a certificate signed by the cluster CA', async () => {
  const attempt = async () => {
    const connection = await Connection.connect({
      address: stack.cluster.address,
      tls: {
        serverNameOverride: FRONTEND_SERVER_NAME,
        serverRootCACertificate: await fs.readFile(stack.cluster.certs.ca),
      },
      connectTimeout: 5_000,
    });
    try {
      await connection.workflowService.getSystemInfo({});
    } finally {
      await connection.close();
    }
  };
  await expect(attempt()).rejects.toThrow();
});

test('a webhook delivered three times over HTTP becomes one payment, one shipment, one mail, one points award', async () => {
  const order = await createOrder();
  const event = { id: `evt_cluster_flow_${process.pid}`, orderId: order.id, amount: 5400 };

  // Two copies at the same instant, as a provider's doubled queue sends them, then a late one.
  const first = await Promise.all([postWebhook(event), postWebhook(event)]);
  for (const answer of first)
    expect(answer).toEqual({ status: 200, body: '{"status":"accepted"}' });
  await eventually(
    `order ${order.id} paid, shipped, mailed, invoiced`,
    () => orderDone(order.id),
    60_000,
  );
  expect(await postWebhook(event)).toEqual({ status: 200, body: '{"status":"accepted"}' });
  // Time for a wrongly started second run to show its effects.
  await delay(3_000);

  expect(await createPaymentsRepository(stack.db.db).countByEventId(event.id)).toBe(1);
  expect(shipmentsFor(order.id)).toHaveLength(1);
  expect(warehouseStatusesFor(order.id).filter((r) => r.status === 201)).toHaveLength(1);
  expect(mailsFor(order.id)).toHaveLength(1);
  const ledger = await createLoyaltyRepository(stack.db.db).ledgerFor(order.userId);
  expect(ledger.filter((e) => e.orderId === order.id)).toHaveLength(1);
  const description = await stack.client.workflow.getHandle(paymentWorkflowId(event.id)).describe();
  expect(description.status.name).toBe('COMPLETED');
}, 120_000);

test('the warehouse fails twice, then the server-scheduled retry ships once (no time skipping)', async () => {
  const order = await createOrder();
  const event = { id: `evt_cluster_retry_${process.pid}`, orderId: order.id, amount: 5400 };
  stack.warehouse.setMode({ kind: 'unavailable', status: 503 }, 2);

  expect((await postWebhook(event)).status).toBe(200);
  await eventually(
    `order ${order.id} shipped after two failures`,
    () => orderDone(order.id),
    150_000,
  );

  const requests = warehouseStatusesFor(order.id);
  expect(requests.map((r) => r.status)).toEqual([503, 503, 201]);
  expect(shipmentsFor(order.id)).toHaveLength(1);
  const gaps = requests
    .slice(1)
    .map((r, i) => (Date.parse(r.at) - Date.parse(requests[i]!.at)) / 1000);
  log(
    `warehouse attempts for order ${order.id}: 503, 503, 201; waits ${gaps.map((g) => `${g.toFixed(1)} s`).join(', ')}`,
  );
  // The waits are the retry policy's (seconds), not an immediate loop.
  for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(1);
}, 180_000);

test('ops failed lists a fulfilment the warehouse refused, and ops retry ships it once', async () => {
  const order = await createOrder();
  const event = { id: `evt_cluster_ops_${process.pid}`, orderId: order.id, amount: 5400 };
  stack.warehouse.setMode({ kind: 'reject', status: 400 }, 1);
  expect((await postWebhook(event)).status).toBe(200);

  let failedId: string | undefined;
  await eventually(
    `a failed workflow for order ${order.id}`,
    async () => {
      for await (const info of stack.client.workflow.list({
        query: 'ExecutionStatus = "Failed"',
      })) {
        // The payment's workflow, or the order's (whichever the fulfilment failure fails).
        if (
          info.workflowId === paymentWorkflowId(event.id) ||
          new RegExp(`(^|[-_])order-${order.id}($|[-_])`).test(info.workflowId)
        ) {
          failedId = info.workflowId;
        }
      }
      return failedId !== undefined;
    },
    60_000,
  );

  log(`failed workflow for order ${order.id}: ${failedId}`);
  const listed = await ops(['failed']);
  expect(listed.code).toBe(0);
  expect(listed.stdout).toContain(failedId);

  const retried = await ops(['retry', failedId!]);
  expect({ code: retried.code, stderr: retried.stderr }).toEqual({
    code: 0,
    stderr: expect.any(String),
  });
  await eventually(`order ${order.id} shipped after ops retry`, () => orderDone(order.id), 90_000);
  expect(shipmentsFor(order.id)).toHaveLength(1);
  expect(await createPaymentsRepository(stack.db.db).countByEventId(event.id)).toBe(1);
  expect(mailsFor(order.id)).toHaveLength(1);

  const after = await ops(['failed']);
  expect(after.code).toBe(0);
  expect(after.stdout).not.toContain(failedId);
}, 240_000);

test('SIGKILL of history, then of matching, while payments are in flight: nothing lost or doubled', async () => {
  const ORDERS = 24;
  const random = createRandom(20261201);
  const orders: PlannedOrder[] = [];
  const events: PaymentEvent[] = [];
  for (let i = 0; i < ORDERS; i++) {
    const amount = random.int(5, 500) * 100;
    const { id, userId } = await createOrder(amount);
    const eventId = `evt_cluster_fault_${process.pid}_${i + 1}`;
    orders.push({ id, userId, amount, eventIds: [eventId] });
    events.push({ id: eventId, orderId: id, amount });
  }
  const accepted = new Set<string>();
  const stats = emptyDeliveryStats();
  const abort = new AbortController();
  const started = Date.now();
  // Deliveries over 20 s, each event 2-3 times, retried on 503 as a provider does.
  const delivering = Promise.all(
    events.map(async (event) => {
      await delay(random.int(0, 20_000));
      await deliverEvent(event, {
        baseUrl: stack.baseUrl,
        secret: WEBHOOK_SECRET,
        random,
        stats,
        accepted,
        signal: abort.signal,
      });
    }),
  );

  const disruptions: Disruption[] = [];
  const faults: Array<{
    service: ServiceName;
    killedAtS: number;
    pid: number | undefined;
    downS: number;
    readyAfterS: number;
  }> = [];
  const fault = async (service: ServiceName, atMs: number) => {
    await delay(Math.max(0, started + atMs - Date.now()));
    const pid = stack.cluster.pid(service);
    const killedAt = Date.now();
    await stack.cluster.kill(service, 'SIGKILL');
    // Down long enough for in-flight calls to fail and shard/partition ownership to lapse.
    await delay(3_000);
    const readyAfter = await stack.cluster.restart(service);
    disruptions.push({ from: killedAt, to: Date.now(), what: `SIGKILL ${service}` });
    faults.push({
      service,
      pid,
      killedAtS: (killedAt - started) / 1000,
      downS: (Date.now() - killedAt) / 1000,
      readyAfterS: readyAfter / 1000,
    });
    log(
      `${service} (pid ${pid}) SIGKILLed at ${((killedAt - started) / 1000).toFixed(1)} s, serving again after ${((Date.now() - killedAt) / 1000).toFixed(1)} s`,
    );
  };
  await fault('history', 5_000);
  await fault('matching', 13_000);
  const deliveryTimeout = setTimeout(() => abort.abort(), 120_000);
  await delivering;
  clearTimeout(deliveryTimeout);

  await eventually(
    'every fault-phase order paid, shipped, mailed and invoiced',
    async () => (await Promise.all(orders.map((o) => orderDone(o.id)))).every(Boolean),
    240_000,
  );
  // Let stragglers (a second run, a doubled send) surface before counting.
  await delay(5_000);

  const orderIds = new Set(orders.map((o) => o.id));
  const eventIds = new Set(events.map((e) => e.id));
  const messageIds = new Set(orders.map((o) => confirmationMessageId(o.id, MAIL_FROM)));
  const invoiceFiles = readdirSync(stack.invoiceDir).filter((f) =>
    orderIds.has(Number(/^order-(\d+)\.pdf$/.exec(f)?.[1])),
  );
  const evidence = await gatherEvidence({
    db: stack.db,
    client: stack.client,
    orders,
    acceptedEventIds: accepted,
    warehouseRequests: stack.warehouse.requests.filter((r) => orderIds.has(Number(r.orderId))),
    shipments: [...stack.warehouse.shipments.values()].filter((s) => orderIds.has(s.orderId)),
    mails: stack.smtp.messages.filter((m) => m.messageId && messageIds.has(m.messageId)),
    invoiceFiles,
  });
  // The namespace also holds the other tests' workflows: judge this phase's only.
  const mine = (id: string) =>
    [...eventIds].some((e) => id === paymentWorkflowId(e)) ||
    [...orderIds].some((o) => new RegExp(`(^|-)order-${o}$`).test(id));
  evidence.workflows = evidence.workflows.filter((w) => mine(w.workflowId));
  const verdict = checkInvariants(evidence, {
    confirmationMessageId: (id) => confirmationMessageId(id, MAIL_FROM),
    disruptions,
    strictMail: false,
  });

  const t = verdict.totals;
  const rows: Array<[string, number, number | undefined]> = [
    ['payment events accepted (200)', ORDERS, accepted.size],
    ['payment rows', ORDERS, t.paymentRows],
    ['shipments created', ORDERS, t.shipments],
    ['warehouse requests (incl. replays)', ORDERS, t.warehouseRequests],
    ['confirmation mails (distinct Message-IDs)', ORDERS, t.distinctMessageIds],
    ['confirmation mails received', ORDERS, t.mailsReceived],
    ['loyalty ledger rows', ORDERS, t.ledgerRows],
    ['points awarded', ORDERS * 100, t.pointsAwarded],
    ['invoices', ORDERS, t.invoices],
  ];
  const table = [
    '',
    `Faults on the cluster: ${ORDERS} orders, ${stats.requests} webhook requests (${stats.deliveries} deliveries, ${stats.status503} x 503, ${stats.connectionErrors} connection errors)`,
    ...faults.map(
      (f) =>
        `  SIGKILL ${f.service.padEnd(8)} pid ${f.pid} at ${f.killedAtS.toFixed(1)} s; serving again after ${f.downS.toFixed(1)} s (${f.readyAfterS.toFixed(1)} s after restart)`,
    ),
    '',
    `  ${'what'.padEnd(44)} ${'expected'.padStart(8)} ${'observed'.padStart(8)}`,
    ...rows.map(
      ([what, expected, observed]) =>
        `  ${what.padEnd(44)} ${String(expected).padStart(8)} ${String(observed).padStart(8)}`,
    ),
    `  workflows by status: ${JSON.stringify(t.workflowsByStatus)}`,
    `  verdict: ${verdict.passed ? 'nothing lost, nothing doubled' : `${verdict.failures.length} finding(s)`}`,
    ...verdict.failures.map(
      (f) => `    ${f.kind}: order ${f.orderId ?? '-'} event ${f.eventId ?? '-'}: ${f.what}`,
    ),
    ...verdict.duplicateMails.map(
      (d) =>
        `    duplicate mail (same Message-ID) for order ${d.orderId}, explained by ${d.explainedBy}`,
    ),
    '',
  ].join('\n');
  process.stdout.write(`${table}\n`);
  await fs.writeFile(path.join(root, 'faults.txt'), table);

  expect(stats.unexpected).toEqual([]);
  expect(verdict.failures).toEqual([]);
  expect(t.paymentRows).toBe(ORDERS);
  expect(t.shipments).toBe(ORDERS);
  expect(t.ledgerRows).toBe(ORDERS);
  expect(stack.cluster.unexpectedExits()).toEqual([]);
}, 600_000);
