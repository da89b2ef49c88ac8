import { mkdir, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { WorkflowFailedError, type Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { createStockActivities } from '../src/activities/stock-activities';
import {
  createOrdersRepository,
  createSettlementsRepository,
  createStockRepository,
  type DatabaseHandle,
} from '../src/db';
import { startSmtpSink, type SmtpSink } from './partners/smtp-sink';
import {
  ALERT_DIGEST_WORKFLOW_TYPE,
  alertDigestWorkflowId,
  digestPostWorkflowId,
  failureAlertWorkflowId,
  refundReviewAlertWorkflowId,
} from '../src/shared/alert';
import { handOverSettlement, recordSettlement } from '../src/operator/settle';
import { HEAVY_TASK_QUEUE, PAYMENTS_TASK_QUEUE, paymentWorkflowId } from '../src/shared/constants';
import { orderWorkflowId } from '../src/shared/order';
import type { PaymentWorkflowInput } from '../src/shared/payment';
import type { RefundEvent } from '../src/shared/payment-events';
import { CUSTOM_SEARCH_ATTRIBUTES } from '../src/shared/search-attributes';
import {
  createPaymentStarter,
  type PaymentStarter,
  type StartedPayment,
} from '../src/temporal/payment-starter';
import { createWarehouseSimulator, type WarehouseSimulator } from './partners/warehouse-simulator';
import { createPaymentWorker } from '../src/workers/payments';
import type { aggregateStockWorkflow } from '../src/workflows';
import { historyToJson } from '../test/replay/history-json';
import { testActivityDeps } from '../test/support/activity-deps';
import { testDatabases } from '../test/support/databases';
import { createDevServerEnv } from '../test/support/temporal';

/**
 * `npm run record-histories -- <set>`: runs representative scenarios through the real payment
 * worker (dev server, SQLite temp database, warehouse simulator, SMTP sink, alert sink) and
 * writes every workflow's history to test/replay/histories/<set>/<scenario>-<workflowType>.json,
 * plus a manifest with the workflow IDs, which histories do not contain and which the workflows
 * use (the failure alert's workflow ID is derived from the failed run's). test/replay replays
 * every committed set against the current code. See docs/deploys.md for when to record a set.
 */

const HISTORIES_DIR = path.resolve(__dirname, '..', 'test', 'replay', 'histories');
/**
 * Each scenario takes seconds (warehouse-retried: its 10 s and 30 s waits); past this something
 * hangs (e.g. an unregistered attribute).
 */
const SCENARIO_TIMEOUT_MS = 120_000;

/** One committed history, as listed in `<set>/manifest.json` (read by test/replay). */
export interface ManifestEntry {
  file: string;
  scenario: string;
  workflowType: string;
  workflowId: string;
  runId: string;
}

interface Run {
  workflowId: string;
  runId: string;
}

interface Stack {
  env: TestWorkflowEnvironment;
  client: Client;
  db: DatabaseHandle;
  starter: PaymentStarter;
  warehouse: WarehouseSimulator;
}

interface Scenario {
  name: string;
  what: string;
  run(stack: Stack): Promise<Run[]>;
}

const scenarios: Scenario[] = [
  {
    name: 'fulfilled',
    what: 'a payment that fulfils its order (warehouse, mail, loyalty points)',
    async run(stack) {
      const orderId = await newOrder(stack);
      const payment = await pay(stack, orderId);
      expectResult(payment.result, { created: true }, 'payment');
      const order = await finished(stack.client, orderWorkflowId(orderId));
      return [payment.run, order.run];
    },
  },
  {
    name: 'duplicate-event',
    what: 'an event redelivered after the server forgot its workflow (created=false)',
    async run(stack) {
      const orderId = await newOrder(stack);
      const input = paymentInput(orderId);
      await pay(stack, orderId, input);
      await finished(stack.client, orderWorkflowId(orderId));
      // What the namespace's retention does to a closed run, done now.
      const workflowId = paymentWorkflowId(input.eventId);
      await stack.client.workflowService.deleteWorkflowExecution({
        namespace: stack.env.namespace ?? 'default',
        workflowExecution: { workflowId },
      });
      await until('the deleted payment run is gone', async () => {
        try {
          await stack.client.workflow.getHandle(workflowId).describe();
          return false;
        } catch {
          return true;
        }
      });
      const again = await pay(stack, orderId, input);
      expectResult(again.result, { created: false }, 'redelivered payment');
      return [again.run];
    },
  },
  {
    name: 'double-charge',
    what: 'a second payment for a paid order: refund review and its alert',
    async run(stack) {
      const orderId = await newOrder(stack);
      await pay(stack, orderId);
      await finished(stack.client, orderWorkflowId(orderId));
      const second = paymentInput(orderId);
      const payment = await pay(stack, orderId, second);
      expectResult(payment.result, { created: true }, 'second payment');
      const order = await finished(stack.client, orderWorkflowId(orderId));
      const alert = await finished(
        stack.client,
        refundReviewAlertWorkflowId(orderId, second.eventId),
      );
      expectResult(alert.result, { delivered: true }, 'refund review alert');
      return [payment.run, order.run, alert.run];
    },
  },
  {
    name: 'amount-mismatch',
    what: 'a payment that is not the order total: recorded, flagged and alerted, order unpaid',
    async run(stack) {
      const orderId = await newOrder(stack);
      const short = { ...paymentInput(orderId), amount: 1 };
      const payment = await pay(stack, orderId, short);
      expectResult(payment.result, { created: true }, 'short payment');
      const order = await finished(stack.client, orderWorkflowId(orderId));
      const alert = await finished(
        stack.client,
        refundReviewAlertWorkflowId(orderId, short.eventId),
      );
      expectResult(alert.result, { delivered: true }, 'amount mismatch alert');
      return [payment.run, order.run, alert.run];
    },
  },
  {
    name: 'settled',
    what: 'a short payment settled by an operator (ops settle): the order fulfilled once',
    async run(stack) {
      const orderId = await newOrder(stack);
      await pay(stack, orderId, { ...paymentInput(orderId), amount: 5000 });
      await finished(stack.client, orderWorkflowId(orderId));
      const outcome = await recordSettlement(createSettlementsRepository(stack.db.db), {
        orderId,
        settledBy: 'record-histories',
        reason: 'customer paid the rest in cash',
      });
      if (outcome.kind !== 'settled') throw new Error(`settle: ${show(outcome)}`);
      await handOverSettlement(stack.client, outcome.settlement);
      const order = await finished(stack.client, orderWorkflowId(orderId));
      expectFulfilled(order.result);
      return [order.run];
    },
  },
  {
    name: 'warehouse-failure',
    what: 'the warehouse rate-limits, then refuses: order Failed, shipment failed, one alert',
    async run(stack) {
      const orderId = await newOrder(stack);
      // A 429 first, so the history holds the budget's durable wait; then a 400 ends the budget.
      stack.warehouse.setMode({ kind: 'rate_limit', retryAfter: '1' }, 1);
      const payment = await pay(stack, orderId, paymentInput(orderId), async () => {
        await until('the warehouse rate-limited the first attempt', async () =>
          stack.warehouse.requests.some((r) => r.orderId === orderId && r.status === 429),
        );
        stack.warehouse.setMode({ kind: 'reject', status: 400 });
      });
      const order = await finished(stack.client, orderWorkflowId(orderId));
      stack.warehouse.setMode({ kind: 'ok' });
      if (!(order.failure instanceof WorkflowFailedError))
        throw new Error(`the order workflow should have failed; it returned ${show(order.result)}`);
      const stored = await createOrdersRepository(stack.db.db).findById(orderId);
      if (stored?.shipmentStatus !== 'failed')
        throw new Error(`shipment_status should be failed, is ${show(stored?.shipmentStatus)}`);
      const alert = await finished(
        stack.client,
        failureAlertWorkflowId(order.run.workflowId, order.run.runId),
      );
      expectResult(alert.result, { skipped: 'reported-to-digest' }, 'failure alert');
      const digest = await openedDigest(stack, order.run.runId);
      return [payment.run, order.run, alert.run, digest];
    },
  },
  {
    name: 'warehouse-retried',
    what: 'the warehouse answers 503 twice, then ships: three attempts of one activity (40 s)',
    async run(stack) {
      const orderId = await newOrder(stack);
      stack.warehouse.setMode({ kind: 'unavailable', status: 503 }, 2);
      const payment = await pay(stack, orderId);
      const order = await finished(stack.client, orderWorkflowId(orderId));
      expectFulfilled(order.result);
      return [payment.run, order.run];
    },
  },
  {
    name: 'warehouse-rate-limited',
    what: 'the warehouse answers 429 with Retry-After: 1, then ships',
    async run(stack) {
      const orderId = await newOrder(stack);
      stack.warehouse.setMode({ kind: 'rate_limit', retryAfter: '1' }, 1);
      const payment = await pay(stack, orderId);
      const order = await finished(stack.client, orderWorkflowId(orderId));
      expectFulfilled(order.result);
      return [payment.run, order.run];
    },
  },
  {
    name: 'gave-up-with-double-charge',
    what: 'the warehouse refuses while a second payment waits: compensated, the second flagged',
    async run(stack) {
      const orderId = await newOrder(stack);
      // A 503 first, so the second payment arrives while the first's fulfilment retries; then a
      // 400 ends it.
      stack.warehouse.setMode({ kind: 'unavailable', status: 503 }, 1);
      const second = paymentInput(orderId);
      const payment = await pay(stack, orderId, paymentInput(orderId), async () => {
        await until('the warehouse failed the first attempt', async () =>
          stack.warehouse.requests.some((r) => r.orderId === orderId && r.status === 503),
        );
        stack.warehouse.setMode({ kind: 'reject', status: 400 });
      });
      await pay(stack, orderId, second);
      const order = await finished(stack.client, orderWorkflowId(orderId));
      stack.warehouse.setMode({ kind: 'ok' });
      if (!(order.failure instanceof WorkflowFailedError))
        throw new Error(`the order workflow should have failed; it returned ${show(order.result)}`);
      const review = await finished(
        stack.client,
        refundReviewAlertWorkflowId(orderId, second.eventId),
      );
      expectResult(review.result, { delivered: true }, 'refund review alert');
      const alert = await finished(
        stack.client,
        failureAlertWorkflowId(order.run.workflowId, order.run.runId),
      );
      expectResult(alert.result, { skipped: 'reported-to-digest' }, 'failure alert');
      // One history per workflow type and scenario: the second payment and the failure alert
      // take the same paths as in the other scenarios.
      return [payment.run, order.run, review.run];
    },
  },
  {
    name: 'unknown-order',
    what: 'a payment for an order that does not exist: kept in the unmatched inbox, run completed',
    async run(stack) {
      const missing = (await newOrder(stack)) + 1_000_000;
      const payment = await pay(stack, missing);
      expectResult(payment.result, { kind: 'unmatched', created: true }, 'unknown-order payment');
      return [payment.run];
    },
  },
  {
    name: 'refunded',
    what: 'an order handed to the warehouse refunded in part, then in full: shipment cancelled',
    async run(stack) {
      const orderId = await newOrder(stack);
      const payment = paymentInput(orderId);
      await pay(stack, orderId, payment);
      await finished(stack.client, orderWorkflowId(orderId));
      const refund = (amount: number): RefundEvent => ({
        eventId: `evt_record_refund_${Date.now().toString(36)}_${++eventCounter}`,
        paymentRef: payment.eventId,
        kind: 'refund',
        refundId: `re_${eventCounter}`,
        amount,
        status: 'succeeded',
      });
      const partial = await intake(stack, await stack.starter.startRefund(refund(1000)));
      await finished(stack.client, orderWorkflowId(orderId));
      await intake(stack, await stack.starter.startRefund(refund(4400)));
      const order = await finished(stack.client, orderWorkflowId(orderId));
      return [partial.run, order.run];
    },
  },
  {
    name: 'disputed',
    what: 'a dispute of a paid order opened: recorded on the order, one alert with the evidence deadline',
    async run(stack) {
      const orderId = await newOrder(stack);
      const payment = paymentInput(orderId);
      await pay(stack, orderId, payment);
      await finished(stack.client, orderWorkflowId(orderId));
      const dispute = await intake(
        stack,
        await stack.starter.startDispute({
          eventId: `evt_record_dispute_${Date.now().toString(36)}_${++eventCounter}`,
          paymentRef: payment.eventId,
          disputeId: `dp_${eventCounter}`,
          amount: 5400,
          status: 'opened',
          evidenceDueBy: '2030-01-01T00:00:00.000Z',
        }),
      );
      const order = await finished(stack.client, orderWorkflowId(orderId));
      return [dispute.run, order.run];
    },
  },
  {
    name: 'stock-aggregation',
    what: 'one stock snapshot, as the schedule starts it',
    async run(stack) {
      const workflowId = `record-histories-aggregate-stock-${Date.now()}`;
      await stack.client.workflow.start<typeof aggregateStockWorkflow>('aggregateStockWorkflow', {
        workflowId,
        taskQueue: PAYMENTS_TASK_QUEUE,
        args: [{ scheduledAt: new Date().toISOString() }],
      });
      const stock = await finished(stack.client, workflowId);
      return [stock.run];
    },
  },
];

async function main(argv: string[]): Promise<number> {
  const force = argv.includes('--force');
  const [set, ...rest] = argv.filter((a) => a !== '--force');
  if (!set || rest.length > 0 || !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(set)) {
    process.stderr.write(
      'Usage: npm run record-histories -- <set> [--force]\n' +
        '  Records the replay histories of the current workflow code into\n' +
        '  test/replay/histories/<set>/ (e.g. v3). --force replaces an existing set.\n',
    );
    return 2;
  }
  const outDir = path.join(HISTORIES_DIR, set);
  const existing = await readdir(outDir).catch(() => [] as string[]);
  if (existing.length > 0 && !force) {
    process.stderr.write(
      `${path.relative(process.cwd(), outDir)} already holds histories. Committed histories are ` +
        'what running workflows look like: record a new set under another name, or pass --force.\n',
    );
    return 1;
  }

  // Warnings and errors only: the failure scenarios log their (expected) failures.
  Runtime.install({
    logger: new DefaultLogger('WARN', (entry) =>
      process.stderr.write(`  [sdk ${entry.level.toLowerCase()}] ${entry.message}\n`),
    ),
    shutdownSignals: [],
  });

  const closers: Array<() => Promise<void>> = [];
  try {
    process.stdout.write('Starting a dev server, a SQLite database and the local peers…\n');
    const env = await createDevServerEnv({
      searchAttributes: [...CUSTOM_SEARCH_ATTRIBUTES],
      fastDeletion: true,
    });
    closers.push(() => env.teardown());
    const db = await testDatabases[0]!.create();
    closers.push(() => db.close());
    const warehouse = createWarehouseSimulator();
    const warehouseUrl = await warehouse.listen(0);
    closers.push(() => warehouse.close());
    const smtp: SmtpSink = await startSmtpSink();
    closers.push(() => smtp.close());
    const alertSink = await startAlertSink();
    closers.push(() => alertSink.close());

    const worker: Worker = await createPaymentWorker({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      activities: {
        ...testActivityDeps(db, { warehouseUrl, smtpUrl: smtp.url }),
        alerts: { alertWebhookUrl: alertSink.url, temporalUiUrl: undefined },
      },
    });
    // The stock aggregation's activity runs on `heavy` (src/workflows/stock.ts): a worker there
    // with only that activity, as no other scenario schedules work on that queue.
    const stockWorker = await Worker.create({
      connection: env.nativeConnection,
      namespace: env.namespace ?? 'default',
      taskQueue: HEAVY_TASK_QUEUE,
      activities: createStockActivities({ stock: createStockRepository(db.db) }),
    });
    const stack: Stack = {
      env,
      client: env.client,
      db,
      starter: createPaymentStarter(env.client, { startTimeoutMs: 10_000 }),
      warehouse,
    };

    const entries = await stockWorker.runUntil(
      worker.runUntil(async () => {
        const recorded: Array<ManifestEntry & { history: string }> = [];
        for (const scenario of scenarios) {
          process.stdout.write(`Scenario ${scenario.name}: ${scenario.what}\n`);
          const runs = await withTimeout(scenario.run(stack), SCENARIO_TIMEOUT_MS, scenario.name);
          for (const run of runs)
            recorded.push(await fetchHistory(stack.client, scenario.name, run));
        }
        return recorded;
      }),
    );

    await rm(outDir, { recursive: true, force: true });
    await mkdir(outDir, { recursive: true });
    for (const entry of entries) {
      await writeFile(path.join(outDir, entry.file), `${entry.history}\n`);
      process.stdout.write(`  wrote ${path.relative(process.cwd(), outDir)}/${entry.file}\n`);
    }
    const manifest = entries.map(({ history: _history, ...entry }) => entry);
    await writeFile(path.join(outDir, 'manifest.json'), `${JSON.stringify(manifest, null, 2)}\n`);
    process.stdout.write(
      `Recorded ${entries.length} histories. Run \`npx jest test/replay\`, then commit ` +
        `${path.relative(process.cwd(), outDir)}.\n`,
    );
    return 0;
  } finally {
    for (const close of closers.reverse()) await close().catch(() => undefined);
  }
}

async function fetchHistory(
  client: Client,
  scenario: string,
  run: Run,
): Promise<ManifestEntry & { history: string }> {
  const handle = client.workflow.getHandle(run.workflowId, run.runId);
  const history = await handle.fetchHistory();
  const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
  const workflowType = started?.workflowType?.name;
  if (!workflowType) throw new Error(`${run.workflowId}: history does not start the workflow`);
  return {
    file: `${scenario}-${workflowType}.json`,
    scenario,
    workflowType,
    workflowId: run.workflowId,
    runId: run.runId,
    history: historyToJson(history),
  };
}

let orderCounter = 0;
async function newOrder(stack: Stack): Promise<number> {
  const { order } = await createOrdersRepository(stack.db.db).createWithIdempotencyKey({
    userId: 1,
    customerEmail: `buyer${++orderCounter}@example.com`,
    totalAmount: 5400,
  });
  return order.id;
}

let eventCounter = 0;
function paymentInput(orderId: number): PaymentWorkflowInput {
  return {
    eventId: `evt_record_${Date.now().toString(36)}_${++eventCounter}`,
    orderId,
    amount: 5400,
  };
}

/** Starts a payment as the webhook does (same start options) and waits for it to close. */
async function pay(
  stack: Stack,
  orderId: number,
  input = paymentInput(orderId),
  whileRunning?: () => Promise<void>,
) {
  const started = await stack.starter.start(input);
  if (started.duplicate) throw new Error(`${started.workflowId} was unexpectedly a duplicate`);
  await whileRunning?.();
  const done = await finished(stack.client, started.workflowId);
  if (done.failure)
    throw new Error(`payment ${started.workflowId} did not complete`, { cause: done.failure });
  return done;
}

/**
 * The digest of the failure's cause, once its "opened" post went out (the incident is named by
 * the failed run): a running workflow, whose history so far is what a new build must replay.
 */
async function openedDigest(stack: Stack, failedRunId: string): Promise<Run> {
  let digest: Run | undefined;
  await until('the failure digest posted its opened alert', async () => {
    for await (const info of stack.client.workflow.list({
      query: `WorkflowType = '${ALERT_DIGEST_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'`,
    })) {
      const cause = info.workflowId.slice(alertDigestWorkflowId('').length);
      const opened = digestPostWorkflowId(cause, failedRunId, 'opened');
      const post = await stack.client.workflow
        .getHandle(opened)
        .describe()
        .catch(() => undefined);
      if (post?.status.name === 'COMPLETED')
        digest = { workflowId: info.workflowId, runId: info.runId };
    }
    return digest !== undefined;
  });
  return digest!;
}

/** Waits for a refund or dispute intake started as the webhook starts it. */
async function intake(stack: Stack, started: StartedPayment) {
  if (started.duplicate) throw new Error(`${started.workflowId} was unexpectedly a duplicate`);
  const done = await finished(stack.client, started.workflowId);
  if (done.failure)
    throw new Error(`${started.workflowId} did not complete`, { cause: done.failure });
  return done;
}

/** Waits for the latest run of a workflow to close, and says which run that was. */
async function finished(client: Client, workflowId: string) {
  const handle = client.workflow.getHandle(workflowId);
  let result: unknown;
  let failure: Error | undefined;
  try {
    result = await handle.result();
  } catch (err) {
    failure = err instanceof Error ? err : new Error(String(err));
  }
  const { runId } = await handle.describe();
  return { run: { workflowId, runId }, result, failure };
}

function expectFulfilled(orderResult: unknown): void {
  const processed = (orderResult as { processed?: Array<{ outcome: string }> } | undefined)
    ?.processed;
  if (processed?.[0]?.outcome !== 'fulfilled')
    throw new Error(`the order should be fulfilled; its workflow returned ${show(orderResult)}`);
}

function expectResult(actual: unknown, expected: Record<string, unknown>, what: string): void {
  const record = (actual ?? {}) as Record<string, unknown>;
  for (const [key, value] of Object.entries(expected)) {
    if (record[key] !== value)
      throw new Error(`${what}: expected ${key}=${show(value)}, got ${show(actual)}`);
  }
}

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting until ${what}`);
    await delay(50);
  }
}

async function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`scenario ${what} took over ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A Slack-like alert webhook that answers each alert's first delivery with 429 (Retry-After 1 s)
 * and accepts the second, so alert histories hold the rate-limit wait too.
 */
async function startAlertSink(): Promise<{ url: string; close(): Promise<void> }> {
  const seen = new Set<string>();
  const server: Server = createServer((request, response) => {
    request.resume();
    request.on('end', () => {
      const key = String(request.headers['idempotency-key'] ?? '');
      if (!seen.has(key)) {
        seen.add(key);
        response.writeHead(429, { 'retry-after': '1' }).end();
      } else {
        response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/alerts`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

function show(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(
      `record-histories failed: ${err instanceof Error ? err.stack : String(err)}\n`,
    );
    process.exit(1);
  },
);
