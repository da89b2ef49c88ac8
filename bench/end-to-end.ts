import path from 'node:path';
import type { Client } from '@temporalio/client';
import { createPaymentsRepository } from '../src/db';
import { paymentWorkflowId } from '../src/shared/constants';
import { orderWorkflowId } from '../src/shared/order';
import type { ActivityTimingSummary } from './lib/activity-timing';
import { readBenchArgs } from './lib/args';
import { FLOWS, OrderPool, type Flow, type FlowContext, type FlowKind } from './lib/flows';
import { keepAliveAgent } from './lib/http-client';
import { closedLoop } from './lib/loop';
import { CpuMeter } from './lib/procstat';
import { machineFacts, table, writeResults, type Cell } from './lib/report';
import { fmt, fmtRatio, mean, median, percentile, sum } from './lib/stats';
import { serverProcessSection } from './lib/server-cpu';
import { startServerOfKind } from './lib/temporal';
import { startSystem, watchdog, type System } from './lib/system';

/**
 * (b) End to end: completed flows per second and their latency, ours against a minimal workflow
 * (one no-op activity) and against a mirror of our flow's shape with no-op activities, on the
 * same server and worker settings, in alternating rounds. Each variant runs as a closed loop of
 * `concurrency` lanes: a lane starts a flow, waits until all of it has completed, and starts the
 * next.
 */

const KINDS: FlowKind[] = ['ours', 'baseline', 'mirror'];

const LABEL: Record<FlowKind, string> = {
  ours: 'ours: webhook → payment wf → order wf (real activities)',
  baseline: 'baseline: 1 workflow, 1 no-op activity',
  mirror: 'mirror: our shape, no-op activities',
};

const SETTINGS = {
  full: {
    concurrencies: [1, 16],
    rounds: 3,
    roundMs: { 1: 4_000, 16: 6_000 } as Record<number, number>,
    warmupMs: 2_000,
    orders: 1_500,
  },
  quick: {
    concurrencies: [16],
    rounds: 1,
    roundMs: { 16: 3_000 } as Record<number, number>,
    warmupMs: 1_000,
    orders: 150,
  },
};

interface Round {
  kind: FlowKind;
  concurrency: number;
  round: number;
  flows: Flow[];
  failed: number;
  firstError?: string;
  elapsedMs: number;
  cpu: Record<string, number>;
  activities: ActivityTimingSummary[];
  /** Our flow only: payments.created_at minus the webhook's send time, per flow. */
  paymentRowMs: number[];
  /** Our flow only: setShipmentStatus('requested') returned, minus the send time, per flow. */
  shipmentMs: number[];
}

const runTag = `${Date.now().toString(36)}${process.pid}`;

async function main(): Promise<void> {
  const args = await readBenchArgs(
    "Completed flows per second and their latency, ours against a minimal workflow and a mirror of our flow's shape with no-op activities, in alternating rounds.",
  );
  const settings = { ...(args.quick ? SETTINGS.quick : SETTINGS.full) };
  if (args.rounds !== undefined) settings.rounds = args.rounds;
  const startedAt = Date.now();
  const facts = machineFacts();
  // A cluster takes half a minute to start and is stopped here, after the system on it.
  const server = await startServerOfKind(args.server);
  const stopAll = async () => {
    await system.stop();
    await server.shutdown();
  };
  let system: System;
  try {
    system = await startSystem({ http: true, worker: true, server });
  } catch (error) {
    await server.shutdown();
    throw error;
  }
  const disarm = watchdog(args.quick ? 3 * 60_000 : 8 * 60_000, stopAll);
  try {
    const orders = new OrderPool(system.db);
    log(`creating ${settings.orders} orders`);
    await orders.fill(settings.orders);
    const ctx: FlowContext = {
      client: system.client,
      webhookOrigin: system.origins!.webhook,
      agent: keepAliveAgent(Math.max(...settings.concurrencies)),
      idPrefix: `e2e_${runTag}`,
      orders,
    };
    let index = 0;
    const run = async (kind: FlowKind, concurrency: number, durationMs: number) => {
      const flows: Flow[] = [];
      await system.worker!.call('timings', undefined);
      const meter = new CpuMeter(system.pids);
      const loop = await closedLoop({
        concurrency,
        durationMs,
        op: async () => void flows.push(await FLOWS[kind](ctx, index++)),
      });
      const cpu = meter.read();
      const activities = await system.worker!.call('timings', undefined);
      const shipments = new Map(await system.worker!.call('shipments', undefined));
      const shipmentMs = flows.flatMap((f) => {
        const at = f.orderId === undefined ? undefined : shipments.get(f.orderId);
        return at === undefined ? [] : [at - f.sentAt];
      });
      return { flows, loop, cpu, activities, shipmentMs };
    };

    log(`warming up (${settings.warmupMs} ms per variant)`);
    for (const kind of KINDS)
      await run(kind, Math.max(...settings.concurrencies), settings.warmupMs);

    const rounds: Round[] = [];
    for (const concurrency of settings.concurrencies) {
      for (let round = 1; round <= settings.rounds; round++) {
        for (const kind of KINDS) {
          const { flows, loop, cpu, activities, shipmentMs } = await run(
            kind,
            concurrency,
            settings.roundMs[concurrency]!,
          );
          const paymentRowMs = kind === 'ours' ? await paymentRowLatencies(system, flows) : [];
          rounds.push({
            kind,
            concurrency,
            round,
            flows,
            failed: loop.failed,
            firstError: loop.firstError,
            elapsedMs: loop.elapsedMs,
            cpu,
            activities,
            paymentRowMs,
            shipmentMs,
          });
          log(
            `c=${concurrency} round ${round} ${kind}: ${fmt(rate(rounds.at(-1)!))} flows/s, p50 ${fmt(percentile(flows.map(total), 50))} ms${loop.failed ? `, ${loop.failed} failed (${loop.firstError})` : ''}`,
          );
        }
      }
    }

    const shape = await flowShapes(system.client, rounds);
    const file = await writeResults({
      name: args.server === 'cluster' ? 'end-to-end-cluster' : 'end-to-end',
      title: 'End to end: completed flows per second, ours vs a minimal workflow',
      args,
      facts,
      startedAt,
      setup: {
        'Temporal server': system.server.description,
        database: 'SQLite file (WAL), shared by the HTTP and worker processes',
        processes:
          'driver (closed-loop client, warehouse simulator, SMTP sink); HTTP process; worker process (payments worker + bench worker, same settings: SDK defaults, 100 activity slots, 40 workflow task slots); the Temporal server above',
        rounds: `${settings.rounds} per variant and concurrency, alternating ${KINDS.join(', ')}; ${settings.concurrencies.map((c) => `${settings.roundMs[c]! / 1000} s at concurrency ${c}`).join(', ')}; warm-up ${settings.warmupMs / 1000} s per variant first. A round stops starting flows at its end and waits for those in flight.`,
      },
      sections: [
        ...settings.concurrencies.map((c) => summarySection(rounds, c, shape)),
        shapeSection(shape),
        activitySection(rounds, Math.max(...settings.concurrencies)),
        cpuSection(rounds, Math.max(...settings.concurrencies)),
        ...optional(
          serverProcessSection({
            heading: `## Temporal cluster processes (concurrency ${Math.max(...settings.concurrencies)})`,
            unit: 'flow',
            scale: 1000,
            scaleLabel: 'milliseconds',
            rows: KINDS.map((k) => {
              const mine = rounds.filter(
                (r) => r.kind === k && r.concurrency === Math.max(...settings.concurrencies),
              );
              return {
                label: LABEL[k],
                units: sum(mine.map((r) => r.flows.length)),
                seconds: sum(mine.map((r) => r.elapsedMs)) / 1000,
                cpu: mine.map((r) => r.cpu),
              };
            }),
          }),
        ),
        roundsSection(rounds),
      ],
    });
    log(`wrote ${path.relative(process.cwd(), file)}`);
  } finally {
    disarm();
    await stopAll();
  }
}

const total = (f: Flow) => f.doneAt - f.sentAt;

function rate(round: Round): number {
  return (round.flows.length / round.elapsedMs) * 1000;
}

async function paymentRowLatencies(system: System, flows: Flow[]): Promise<number[]> {
  const payments = createPaymentsRepository(system.db.db);
  const latencies: number[] = [];
  for (const flow of flows) {
    const [payment] = await payments.listByOrder(flow.orderId!);
    if (payment) latencies.push(Date.parse(payment.createdAt) - flow.sentAt);
  }
  return latencies;
}

/** What one flow of each kind costs the server, counted from the histories of a sample flow. */
interface Shape {
  workflows: number;
  workflowTasks: number;
  activityTasks: number;
  localActivities: number;
  events: number;
  /** Other commands the server carries out: timers, child workflows, search attribute upserts, signals. */
  otherEvents: string[];
}

async function flowShapes(client: Client, rounds: Round[]): Promise<Record<FlowKind, Shape>> {
  const sample = (kind: FlowKind) =>
    rounds.find((r) => r.kind === kind && r.flows.length > 0)!.flows[0]!;
  const ours = sample('ours');
  const ids: Record<FlowKind, string[]> = {
    ours: [paymentWorkflowId(ours.eventId!), orderWorkflowId(ours.orderId!)],
    baseline: [],
    mirror: [],
  };
  // The bench flows' IDs follow from their index; find them in visibility instead of guessing.
  const baselineIds = await listIds(client, 'WorkflowType = "benchNoopWorkflow"', 1);
  const mirrorIds = await listIds(client, 'WorkflowType = "benchMirrorPaymentWorkflow"', 1);
  ids.baseline = baselineIds;
  ids.mirror = mirrorIds.flatMap((id) => [id, id.replace('_mirror_', '_mirror_order_')]);

  const shapes = {} as Record<FlowKind, Shape>;
  for (const kind of KINDS) {
    const shape: Shape = {
      workflows: 0,
      workflowTasks: 0,
      activityTasks: 0,
      localActivities: 0,
      events: 0,
      otherEvents: [],
    };
    for (const id of ids[kind]) {
      const history = await client.workflow.getHandle(id).fetchHistory();
      shape.workflows += 1;
      for (const event of history.events ?? []) {
        shape.events += 1;
        if (event.workflowTaskCompletedEventAttributes) shape.workflowTasks += 1;
        else if (event.markerRecordedEventAttributes?.markerName === 'core_local_activity')
          shape.localActivities += 1;
        else if (event.activityTaskScheduledEventAttributes) shape.activityTasks += 1;
        else if (event.startChildWorkflowExecutionInitiatedEventAttributes)
          shape.otherEvents.push('child workflow start');
        else if (event.upsertWorkflowSearchAttributesEventAttributes)
          shape.otherEvents.push('search attribute upsert');
        else if (event.timerStartedEventAttributes) shape.otherEvents.push('timer');
        else if (event.markerRecordedEventAttributes) shape.otherEvents.push('marker (patch)');
      }
    }
    shapes[kind] = shape;
  }
  return shapes;
}

async function listIds(client: Client, query: string, count: number): Promise<string[]> {
  const ids: string[] = [];
  for await (const execution of client.workflow.list({ query })) {
    if (execution.status.name === 'COMPLETED') ids.push(execution.workflowId);
    if (ids.length >= count) break;
  }
  return ids;
}

function summarySection(
  rounds: Round[],
  concurrency: number,
  shapes: Record<FlowKind, Shape>,
): string {
  const of = (kind: FlowKind) =>
    rounds.filter((r) => r.kind === kind && r.concurrency === concurrency);
  const rateOf = (kind: FlowKind) => median(of(kind).map(rate));
  const rows: Cell[][] = KINDS.map((kind) => {
    const mine = of(kind);
    const rates = mine.map(rate);
    const flows = mine.flatMap((r) => r.flows);
    return [
      LABEL[kind],
      fmt(median(rates)),
      `${fmt(Math.min(...rates))}–${fmt(Math.max(...rates))}`,
      fmt(percentile(flows.map(total), 50)),
      fmt(percentile(flows.map(total), 99)),
      fmt(
        percentile(
          flows.map((f) => f.firstDoneAt - f.sentAt),
          50,
        ),
      ),
      sum(mine.map((r) => r.failed)),
    ];
  });
  const ours = of('ours');
  const accepted = ours.flatMap((r) => r.flows.map((f) => f.acceptedAt - f.sentAt));
  const rowMs = ours.flatMap((r) => r.paymentRowMs);
  const shipmentMs = ours.flatMap((r) => r.shipmentMs);
  const baselineDoneP50 = percentile(
    of('baseline').flatMap((r) => r.flows.map(total)),
    50,
  );

  const raw = rateOf('ours') / rateOf('baseline');
  // Business steps: activities and local activities alike.
  const activities =
    (shapes.ours.activityTasks + shapes.ours.localActivities) / shapes.baseline.activityTasks;
  const tasks =
    (shapes.ours.workflowTasks + shapes.ours.activityTasks) /
    (shapes.baseline.workflowTasks + shapes.baseline.activityTasks);
  const vsMirror = rateOf('ours') / rateOf('mirror');
  const mark = (x: number) => (x >= 0.8 ? 'met' : 'not met');
  // Issue 12: full payments/s ≥ 0.4× the baseline at c=16, ≥ 0.3× at c=1; at c=1 the p50 to
  // "shipment requested" ≤ 2× the baseline's p50 completion.
  const rawTarget = concurrency >= 16 ? 0.4 : 0.3;
  const shipmentRatio = percentile(shipmentMs, 50) / baselineDoneP50;
  return [
    `## Concurrency ${concurrency}`,
    '',
    table(
      [
        'variant',
        'flows/s (median)',
        'min–max',
        'all done p50 ms',
        'all done p99 ms',
        'first workflow done p50 ms',
        'failed',
      ],
      rows,
    ),
    '',
    table(
      ['our flow, from the webhook request', 'p50 ms', 'p99 ms', 'mean ms'],
      [
        [
          'webhook answered 200',
          fmt(percentile(accepted, 50)),
          fmt(percentile(accepted, 99)),
          fmt(mean(accepted)),
        ],
        [
          'payment row written (payments.created_at − send time)',
          fmt(percentile(rowMs, 50)),
          fmt(percentile(rowMs, 99)),
          fmt(mean(rowMs)),
        ],
        [
          'shipment requested (setShipmentStatus "requested" returned − send time)',
          fmt(percentile(shipmentMs, 50)),
          fmt(percentile(shipmentMs, 99)),
          fmt(mean(shipmentMs)),
        ],
      ],
    ),
    '',
    table(
      ['ratio (ours ÷ …)', 'value', 'target (issue 12 for the first two; ≥ 0.8 the older one)'],
      [
        [
          'raw: ÷ baseline flows/s',
          fmtRatio(raw),
          `target ≥ ${rawTarget}: ${raw >= rawTarget ? 'met' : 'not met'}`,
        ],
        [
          'shipment requested p50 ÷ baseline all done p50',
          fmtRatio(shipmentRatio),
          concurrency === 1
            ? `target ≤ 2: ${shipmentRatio <= 2 ? 'met' : 'not met'}`
            : '(target at concurrency 1)',
        ],
        [
          `per step: ÷ baseline, ×${fmt(activities)} (local) activities per flow`,
          fmtRatio(raw * activities),
          mark(raw * activities),
        ],
        [
          `per server task (workflow + activity tasks, ×${fmt(tasks)})`,
          fmtRatio(raw * tasks),
          mark(raw * tasks),
        ],
        ['measured: ÷ mirror (same shape, no-op activities)', fmtRatio(vsMirror), mark(vsMirror)],
      ],
    ),
  ].join('\n');
}

function shapeSection(shapes: Record<FlowKind, Shape>): string {
  return [
    '## What one flow asks of the server',
    '',
    'Counted in the histories of one completed flow of each kind (ours: the payment and order workflows; the invoice it starts on `heavy` is not run here, see bench/results/flow-cost.md for the whole payment).',
    '',
    table(
      [
        'variant',
        'workflows',
        'workflow tasks',
        'activity tasks',
        'local activities',
        'history events',
        'other commands',
      ],
      KINDS.map((kind) => {
        const s = shapes[kind];
        const others = Object.entries(
          s.otherEvents.reduce<Record<string, number>>(
            (acc, e) => ({ ...acc, [e]: (acc[e] ?? 0) + 1 }),
            {},
          ),
        )
          .map(([e, n]) => `${n} ${e}`)
          .join(', ');
        return [
          LABEL[kind],
          s.workflows,
          s.workflowTasks,
          s.activityTasks,
          s.localActivities,
          s.events,
          others || '–',
        ];
      }),
    ),
  ].join('\n');
}

function activitySection(rounds: Round[], concurrency: number): string {
  const rows: Cell[][] = [];
  for (const kind of KINDS) {
    const summaries = rounds
      .filter((r) => r.kind === kind && r.concurrency === concurrency)
      .flatMap((r) => r.activities);
    const byType = new Map<string, ActivityTimingSummary[]>();
    for (const s of summaries) byType.set(s.type, [...(byType.get(s.type) ?? []), s]);
    for (const [type, list] of byType) {
      const count = sum(list.map((s) => s.count));
      const weighted = (pick: (s: ActivityTimingSummary) => number) =>
        sum(list.map((s) => pick(s) * s.count)) / count;
      rows.push([
        kind,
        type,
        count,
        fmt(weighted((s) => s.queueMsMean)),
        fmt(Math.max(...list.map((s) => s.queueMsP99))),
        fmt(weighted((s) => s.runMsMean)),
        fmt(Math.max(...list.map((s) => s.runMsP99))),
      ]);
    }
  }
  return [
    `## Where a flow's time goes (concurrency ${concurrency})`,
    '',
    "Per activity type, in the worker: time from scheduled to started (server and task queue) and time running (our code and its I/O). p99 is the worst round's.",
    '',
    table(
      [
        'variant',
        'activity',
        'count',
        'queued mean ms',
        'queued p99 ms',
        'running mean ms',
        'running p99 ms',
      ],
      rows,
    ),
  ].join('\n');
}

function cpuSection(rounds: Round[], concurrency: number): string {
  const roles = ['driver', 'http', 'worker', 'temporal'];
  const rows: Cell[][] = KINDS.map((kind) => {
    const mine = rounds.filter((r) => r.kind === kind && r.concurrency === concurrency);
    const flows = sum(mine.map((r) => r.flows.length));
    const seconds = sum(mine.map((r) => r.elapsedMs)) / 1000;
    const used = (role: string) => sum(mine.map((r) => r.cpu[role] ?? 0));
    const ours = sum(roles.map(used));
    return [
      LABEL[kind],
      ...roles.map((role) => fmt((used(role) / flows) * 1000)),
      fmt((ours / flows) * 1000),
      `${fmt((ours / seconds) * 100)} %`,
      `${fmt((Math.max(used('machine') - ours, 0) / seconds) * 100)} %`,
    ];
  });
  return [
    `## Where the CPU goes (concurrency ${concurrency})`,
    '',
    'CPU milliseconds per completed flow, from /proc (all threads). 2 cores: 200 % is the whole machine; "other processes" is work outside the benchmark.',
    '',
    table(
      [
        'variant',
        'driver + partners',
        'HTTP process',
        'worker',
        'Temporal server',
        'total',
        'our CPU in use',
        'other processes',
      ],
      rows,
    ),
  ].join('\n');
}

function roundsSection(rounds: Round[]): string {
  return [
    '## Every round',
    '',
    table(
      [
        'concurrency',
        'round',
        'variant',
        'flows',
        'flows/s',
        'all done p50 ms',
        'all done p99 ms',
        'failed',
      ],
      rounds.map((r) => [
        r.concurrency,
        r.round,
        r.kind,
        r.flows.length,
        fmt(rate(r)),
        fmt(percentile(r.flows.map(total), 50)),
        fmt(percentile(r.flows.map(total), 99)),
        r.failed,
      ]),
    ),
  ].join('\n');
}

function log(line: string): void {
  process.stderr.write(`[end-to-end] ${line}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});

/** A section that may be absent, for a spread into the list of sections. */
function optional(section: string | undefined): string[] {
  return section === undefined ? [] : [section];
}
