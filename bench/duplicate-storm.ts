import { readFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import {
  createLoyaltyRepository,
  createOrdersRepository,
  createPaymentsRepository,
} from '../src/db';
import { paymentWorkflowId } from '../src/shared/constants';
import { orderWorkflowId } from '../src/shared/order';
import { readBenchArgs } from './lib/args';
import { OrderPool, ORDER_AMOUNT } from './lib/flows';
import { deliver } from './lib/http-client';
import { CpuMeter } from './lib/procstat';
import { machineFacts, table, writeResults, type Cell } from './lib/report';
import { fmt, median, percentile } from './lib/stats';
import { startSystem, watchdog, type System } from './lib/system';

/**
 * (c) Duplicate storm: one provider event delivered 1,000 times at once, each delivery on a
 * connection of its own (as a provider's retries arrive), over real HTTP to the production
 * wiring. Measures how long until every delivery is answered and until the flow has settled,
 * and checks the invariants: one execution, one payment, one shipment, one mail, one award.
 */

const DELIVERIES = 1_000;
const SETTINGS = { full: { rounds: 3 }, quick: { rounds: 1 } };
const runTag = `${Date.now().toString(36)}${process.pid}`;

interface Storm {
  round: number;
  answered: { status: number; ms: number }[];
  allAnsweredMs: number;
  paymentDoneMs: number;
  settledMs: number;
  cpu: Record<string, number>;
  invariants: Record<string, number>;
}

async function main(): Promise<void> {
  const args = await readBenchArgs(
    'One provider event delivered 1,000 times at once over real HTTP: how long until every delivery is answered and the flow has settled, and one execution, payment, shipment, mail and award.',
  );
  const settings = args.quick ? SETTINGS.quick : SETTINGS.full;
  const startedAt = Date.now();
  const facts = machineFacts();
  const system = await startSystem({ http: true, worker: true });
  const disarm = watchdog(args.quick ? 2 * 60_000 : 5 * 60_000, () => system.stop());
  try {
    const orders = new OrderPool(system.db);
    await orders.fill(settings.rounds + 1);
    // One ordinary delivery first: connections, JIT and the order workflow's code are warm.
    const warm = await orders.take();
    await deliver(
      system.origins!.webhook,
      { id: `storm_${runTag}_warm`, orderId: warm, amount: ORDER_AMOUNT },
      new http.Agent(),
    );
    await system.client.workflow.getHandle(paymentWorkflowId(`storm_${runTag}_warm`)).result();
    await system.client.workflow.getHandle(orderWorkflowId(warm)).result();

    const storms: Storm[] = [];
    for (let round = 1; round <= settings.rounds; round++) {
      const storm = await stormOnce(system, await orders.take(), `storm_${runTag}_${round}`, round);
      storms.push(storm);
      log(
        `round ${round}: all ${DELIVERIES} answered in ${fmt(storm.allAnsweredMs)} ms, settled in ${fmt(storm.settledMs)} ms; ${JSON.stringify(storm.invariants)}`,
      );
    }

    const file = await writeResults({
      name: 'duplicate-storm',
      title: `Duplicate storm: ${DELIVERIES.toLocaleString('en-US')} concurrent deliveries of one event`,
      args,
      facts,
      startedAt,
      setup: {
        'Temporal server': `${system.server.version}, in-memory state, 127.0.0.1`,
        database: 'SQLite file (WAL)',
        deliveries: `${DELIVERIES} POSTs of the same signed event, all sent at once, each on a new TCP connection (no keep-alive), to the HTTP process`,
        rounds: `${settings.rounds}, each with a new order and event, after one ordinary delivery to warm up`,
      },
      sections: [summarySection(storms), invariantSection(storms), cpuSection(storms)],
    });
    log(`wrote ${path.relative(process.cwd(), file)}`);
  } finally {
    disarm();
    await system.stop();
  }
}

async function stormOnce(
  system: System,
  orderId: number,
  eventId: string,
  round: number,
): Promise<Storm> {
  // No keep-alive: every delivery opens its own connection, as independent retries do.
  const agent = new http.Agent({ keepAlive: false, maxSockets: Number.POSITIVE_INFINITY });
  const meter = new CpuMeter(system.pids);
  const t0 = performance.now();
  const answered = await Promise.all(
    Array.from({ length: DELIVERIES }, async () => {
      try {
        const reply = await deliver(
          system.origins!.webhook,
          { id: eventId, orderId, amount: ORDER_AMOUNT },
          agent,
        );
        return { status: reply.status, ms: performance.now() - t0 };
      } catch (error) {
        const status = Number(/answered (\d+)/.exec(String(error))?.[1] ?? 0);
        return { status, ms: performance.now() - t0 };
      }
    }),
  );
  const allAnsweredMs = performance.now() - t0;
  await system.client.workflow.getHandle(paymentWorkflowId(eventId)).result();
  const paymentDoneMs = performance.now() - t0;
  await system.client.workflow.getHandle(orderWorkflowId(orderId)).result();
  const settledMs = performance.now() - t0;
  const cpu = meter.read();
  agent.destroy();
  return {
    round,
    answered,
    allAnsweredMs,
    paymentDoneMs,
    settledMs,
    cpu,
    invariants: await invariants(system, orderId, eventId),
  };
}

/** What the storm left behind; each should be 1 (and 999 duplicates logged). */
async function invariants(
  system: System,
  orderId: number,
  eventId: string,
): Promise<Record<string, number>> {
  const count = async (query: string) => {
    // Visibility is written just after the run closes: ask again briefly if it lags.
    for (let attempt = 0; ; attempt++) {
      const { count: n } = await system.client.workflow.count(query);
      if (n > 0 || attempt >= 20) return n;
      await new Promise((r) => setTimeout(r, 250));
    }
  };
  const order = await createOrdersRepository(system.db.db).findById(orderId);
  const logLines = await settledLogLines(system.logs.http, eventId);
  return {
    'payment workflow executions': await count(`WorkflowId = "${paymentWorkflowId(eventId)}"`),
    'order workflow executions': await count(`WorkflowId = "${orderWorkflowId(orderId)}"`),
    'payment rows': (await createPaymentsRepository(system.db.db).listByOrder(orderId)).length,
    'shipments created by the warehouse': [...system.warehouse.shipments.values()].filter(
      (s) => s.orderId === orderId,
    ).length,
    'requests to the warehouse': system.warehouse.requests.filter((r) => r.orderId === orderId)
      .length,
    'confirmation mails': system.smtp.messages.filter((m) =>
      m.messageId?.startsWith(`<order-${orderId}-`),
    ).length,
    'loyalty awards': (await createLoyaltyRepository(system.db.db).ledgerFor(order!.userId)).filter(
      (e) => e.orderId === orderId,
    ).length,
    'deliveries logged as "workflow started"': logLines.filter((m) =>
      m.includes('payment workflow started'),
    ).length,
    'deliveries logged as duplicates': logLines.filter((m) => m.includes('duplicate delivery'))
      .length,
  };
}

/**
 * The HTTP process's log lines about one event. pino writes asynchronously, and after a storm
 * its buffer drains for a few seconds: read until the count stops growing.
 */
async function settledLogLines(file: string, eventId: string): Promise<string[]> {
  let previous = -1;
  for (let attempt = 0; attempt < 40; attempt++) {
    const messages = readFileSync(file, 'utf8')
      .split('\n')
      .filter((line) => line.includes(`"${eventId}"`) && line.endsWith('}'))
      .map((line) => (JSON.parse(line) as { msg: string }).msg);
    if (messages.length === previous) return messages;
    previous = messages.length;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`the HTTP log kept growing for 20 s after the storm of ${eventId}`);
}

function summarySection(storms: Storm[]): string {
  const rows: Cell[][] = storms.map((s) => {
    const times = s.answered.map((a) => a.ms);
    const statuses = Object.entries(
      s.answered.reduce<Record<number, number>>(
        (acc, a) => ({ ...acc, [a.status]: (acc[a.status] ?? 0) + 1 }),
        {},
      ),
    )
      .map(([status, n]) => `${n}× ${status}`)
      .join(', ');
    return [
      s.round,
      statuses,
      fmt(percentile(times, 50)),
      fmt(percentile(times, 99)),
      fmt(s.allAnsweredMs),
      fmt(s.paymentDoneMs),
      fmt(s.settledMs),
    ];
  });
  rows.push([
    '**median**',
    '',
    fmt(
      median(
        storms.map((s) =>
          percentile(
            s.answered.map((a) => a.ms),
            50,
          ),
        ),
      ),
    ),
    fmt(
      median(
        storms.map((s) =>
          percentile(
            s.answered.map((a) => a.ms),
            99,
          ),
        ),
      ),
    ),
    fmt(median(storms.map((s) => s.allAnsweredMs))),
    fmt(median(storms.map((s) => s.paymentDoneMs))),
    fmt(median(storms.map((s) => s.settledMs))),
  ]);
  return [
    '## Time to settle',
    '',
    'Milliseconds from the first request sent. "Answered" times count from then, so they include waiting for a connection to be accepted.',
    '',
    table(
      [
        'round',
        'answers',
        'answered p50 ms',
        'answered p99 ms',
        'all answered ms',
        'payment workflow completed ms',
        'order workflow completed (settled) ms',
      ],
      rows,
    ),
  ].join('\n');
}

function invariantSection(storms: Storm[]): string {
  const names = Object.keys(storms[0]!.invariants);
  // A delivery answered 503 (its start outran TEMPORAL_START_TIMEOUT_MS) is one the provider
  // delivers again; every delivery answered 200 but the first is logged as a duplicate.
  const accepted = (s: Storm) => s.answered.filter((a) => a.status === 200).length;
  const expected = (name: string, s: Storm) => (name.includes('duplicates') ? accepted(s) - 1 : 1);
  const describeExpected = (name: string) =>
    name.includes('duplicates') ? 'deliveries answered 200, less one' : '1';
  return [
    '## Invariants',
    '',
    table(
      ['what', 'expected', ...storms.map((s) => `round ${s.round}`), 'holds'],
      names.map((name) => [
        name,
        describeExpected(name),
        ...storms.map((s) => s.invariants[name]!),
        storms.every((s) => s.invariants[name] === expected(name, s)) ? 'yes' : '**NO**',
      ]),
    ),
    '',
    'A 503 is the webhook refusing to acknowledge a delivery it could not queue within TEMPORAL_START_TIMEOUT_MS (5 s): the provider delivers it again, and nothing is lost or doubled.',
  ].join('\n');
}

function cpuSection(storms: Storm[]): string {
  const roles = ['driver', 'http', 'worker', 'temporal'];
  return [
    '## CPU per storm',
    '',
    'CPU milliseconds from the first request until the order workflow completed, per process (driver includes the 1,000 client connections, the warehouse simulator and the SMTP sink).',
    '',
    table(
      [
        'round',
        'driver',
        'HTTP process',
        'worker',
        'Temporal server',
        'per delivery in HTTP + Temporal (µs)',
      ],
      storms.map((s) => [
        s.round,
        ...roles.map((r) => fmt((s.cpu[r] ?? 0) * 1000)),
        fmt((((s.cpu.http ?? 0) + (s.cpu.temporal ?? 0)) / DELIVERIES) * 1e6),
      ]),
    ),
  ].join('\n');
}

function log(line: string): void {
  process.stderr.write(`[duplicate-storm] ${line}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
