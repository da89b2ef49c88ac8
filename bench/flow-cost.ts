import os from 'node:os';
import path from 'node:path';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import type { Client } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import type { temporal } from '@temporalio/proto';
import { buildIdOf } from '../src/workers/deployment';
import { createHeavyWorker } from '../src/workers/heavy';
import {
  createOrderExportRepository,
  createOrdersRepository,
  createPaymentsRepository,
  createStockRepository,
} from '../src/db';
import { paymentWorkflowId } from '../src/shared/constants';
import { orderWorkflowId } from '../src/shared/order';
import { invoiceWorkflowId } from '../src/shared/invoice';
import { readBenchArgs } from './lib/args';
import { workflowBundlePath } from './lib/bundles';
import { FLOWS, OrderPool, type Flow, type FlowContext } from './lib/flows';
import { keepAliveAgent } from './lib/http-client';
import { closedLoop } from './lib/loop';
import { CpuMeter } from './lib/procstat';
import { machineFacts, table, writeResults, type Cell } from './lib/report';
import { fmt, median, percentile } from './lib/stats';
import { startSystem, watchdog } from './lib/system';

/**
 * What one payment asks of the Temporal server, counted in the histories of real runs on the
 * dev server (CPU-independent, so it can be taken on a busy machine), and the server's CPU per
 * payment at concurrency 1 (CPU time from /proc, which counts only CPU actually used). The
 * baseline of the end-to-end benchmark (one workflow, one no-op activity) is counted beside it.
 *
 * Unlike bench:e2e, a heavy worker runs (in this process), so the invoice each payment starts on
 * task queue `heavy` is carried out and counted: that is what a payment costs in production.
 *
 * `npm run bench:cost` (or `-- --quick`) prints the table and writes bench/results/flow-cost.md.
 */

interface Count {
  workflows: number;
  workflowTasks: number;
  activityTasks: number;
  localActivities: number;
  events: number;
  /** Other commands and events the server carries out, by kind. */
  other: Map<string, number>;
  /** Names of the business steps the history shows (activities and local activities). */
  steps: string[];
}

const EVENT_KINDS: Array<[keyof temporal.api.history.v1.IHistoryEvent, string]> = [
  ['markerRecordedEventAttributes', 'marker'],
  ['upsertWorkflowSearchAttributesEventAttributes', 'search-attribute upsert'],
  ['startChildWorkflowExecutionInitiatedEventAttributes', 'child workflow start'],
  ['signalExternalWorkflowExecutionInitiatedEventAttributes', 'external signal'],
  ['workflowExecutionSignaledEventAttributes', 'signal received'],
  ['timerStartedEventAttributes', 'timer'],
];

/**
 * CPU is measured with this many flows in flight: at concurrency 1 the server's idle work (long
 * polls, timers of its own) would be spread over few flows and inflate the figure.
 */
const CPU_CONCURRENCY = 8;

const SETTINGS = {
  full: { cpuFlows: 96, warmup: 8 },
  quick: { cpuFlows: 16, warmup: 2 },
};

async function main(): Promise<void> {
  const args = await readBenchArgs(
    "What one payment asks of the Temporal server (history events, tasks) and the server's CPU per payment; writes bench/results/flow-cost.md.",
  );
  // The in-process heavy worker's SDK logs would bury the table.
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const settings = args.quick ? SETTINGS.quick : SETTINGS.full;
  const startedAt = Date.now();
  const facts = machineFacts();
  const system = await startSystem({ http: true, worker: true });
  const disarm = watchdog(5 * 60_000, () => system.stop());
  const invoiceDir = mkdtempSync(path.join(os.tmpdir(), 'order-payments-cost-'));
  const connection = await NativeConnection.connect({ address: system.server.address });
  const paymentsBundle = await workflowBundlePath('payments');
  const heavy = await createHeavyWorker({
    connection,
    namespace: 'default',
    workflowBundlePath: paymentsBundle,
    // The payments worker's build (bench/hosts/worker-host.ts): the invoice child of a pinned
    // order runs on its parent's build.
    deployment: {
      deploymentName: 'order-payments',
      buildId: buildIdOf(readFileSync(paymentsBundle, 'utf8')),
      useWorkerVersioning: true,
    },
    activities: {
      orders: createOrdersRepository(system.db.db),
      payments: createPaymentsRepository(system.db.db),
      orderExport: createOrderExportRepository(system.db.db),
      stock: createStockRepository(system.db.db),
      invoiceDir,
      exportDir: invoiceDir,
      alerts: { alertWebhookUrl: undefined, temporalUiUrl: undefined },
    },
    overrides: { workflowsPath: undefined, interceptors: { workflowModules: [] } },
  });
  const heavyRunning = heavy.run();
  try {
    const orders = new OrderPool(system.db);
    await orders.fill(settings.cpuFlows + settings.warmup + 2);
    const ctx: FlowContext = {
      client: system.client,
      webhookOrigin: system.origins!.webhook,
      agent: keepAliveAgent(1),
      idPrefix: `cost_${Date.now().toString(36)}`,
      orders,
    };
    let index = 0;
    const runFlows = async (kind: 'ours' | 'baseline', n: number, concurrency = 1) => {
      const flows: Flow[] = [];
      const meter = new CpuMeter(system.pids);
      const loop = await closedLoop({
        concurrency,
        durationMs: 5 * 60_000,
        maxOps: n,
        op: async () => void flows.push(await FLOWS[kind](ctx, index++)),
      });
      if (loop.failed > 0)
        throw new Error(`${loop.failed} ${kind} flows failed: ${loop.firstError}`);
      if (kind === 'ours') for (const f of flows) await invoiceDone(system.client, f.orderId!);
      return { flows, cpu: meter.read() };
    };
    log('warming up');
    await runFlows('ours', settings.warmup);
    await runFlows('baseline', settings.warmup);

    log('counting one payment');
    const [sample] = (await runFlows('ours', 1)).flows;
    const ours = await count(system.client, [
      paymentWorkflowId(sample!.eventId!),
      orderWorkflowId(sample!.orderId!),
      invoiceWorkflowId(sample!.orderId!),
    ]);
    const invoice = await count(system.client, [invoiceWorkflowId(sample!.orderId!)]);
    const [baselineId] = await listIds(system.client, 'WorkflowType = "benchNoopWorkflow"', 1);
    const baseline = await count(system.client, [baselineId!]);

    log(`CPU per flow over ${settings.cpuFlows} flows each, concurrency ${CPU_CONCURRENCY}`);
    const cpu = { ours: [] as number[], baseline: [] as number[], oursWorker: [] as number[] };
    const latency = { ours: [] as number[], baseline: [] as number[] };
    // Alternating halves, so drift in the machine hits both alike.
    for (let half = 0; half < 2; half++) {
      for (const kind of ['ours', 'baseline'] as const) {
        const n = settings.cpuFlows / 2;
        const { flows, cpu: used } = await runFlows(kind, n, CPU_CONCURRENCY);
        cpu[kind].push(((used.temporal ?? 0) / n) * 1000);
        if (kind === 'ours') cpu.oursWorker.push(((used.worker ?? 0) / n) * 1000);
        latency[kind].push(...flows.map((f) => f.doneAt - f.sentAt));
      }
    }

    const rows: Cell[][] = [
      ['workflows', ours.workflows, invoice.workflows, baseline.workflows],
      ['workflow tasks', ours.workflowTasks, invoice.workflowTasks, baseline.workflowTasks],
      ['activity tasks', ours.activityTasks, invoice.activityTasks, baseline.activityTasks],
      [
        'local activities (markers)',
        ours.localActivities,
        invoice.localActivities,
        baseline.localActivities,
      ],
      ['history events', ours.events, invoice.events, baseline.events],
      ['other commands and events', others(ours), others(invoice), others(baseline)],
      [
        `Temporal server CPU per flow, ms (c=${CPU_CONCURRENCY}; each half)`,
        cpu.ours.map((x) => fmt(x)).join(', '),
        '(included)',
        cpu.baseline.map((x) => fmt(x)).join(', '),
      ],
      [
        `worker CPU per flow, ms (c=${CPU_CONCURRENCY}; each half)`,
        cpu.oursWorker.map((x) => fmt(x)).join(', '),
        '',
        '',
      ],
      [
        `done p50 ms at c=${CPU_CONCURRENCY} (order workflow / the workflow)`,
        fmt(percentile(latency.ours, 50)),
        '',
        fmt(percentile(latency.baseline, 50)),
      ],
    ];
    const headers = ['per flow', 'one payment (all workflows)', 'of which the invoice', 'baseline'];
    process.stdout.write(`${table(headers, rows)}\n\nsteps: ${ours.steps.join(' → ')}\n`);
    const file = await writeResults({
      name: 'flow-cost',
      title: 'What one payment asks of the Temporal server',
      args,
      facts,
      startedAt,
      setup: {
        'Temporal server': `${system.server.version}, in-memory state, 127.0.0.1`,
        processes:
          'driver (sequential flows, warehouse simulator, SMTP sink, a heavy worker for the invoices); HTTP process; worker process (production payments worker); Temporal dev server',
        'one payment':
          'a signed webhook for a pending order: payment-<event id>, order-<id>, invoice-order-<id> (heavy queue), each counted in its history once the invoice completed',
        CPU: `median server CPU per flow over ${settings.cpuFlows} flows of each kind at concurrency ${CPU_CONCURRENCY}, in two alternating halves; /proc counts only CPU used, so other load on the machine changes it little`,
      },
      sections: [
        table(headers, rows),
        `Business steps in the histories, in order: ${ours.steps.join(' → ')}.`,
        `Median server CPU per flow: ours ${fmt(median(cpu.ours))} ms, baseline ${fmt(median(cpu.baseline))} ms (${fmt(median(cpu.ours) / median(cpu.baseline))}×).`,
      ],
    });
    log(`wrote ${path.relative(process.cwd(), file)}`);
  } finally {
    disarm();
    heavy.shutdown();
    await heavyRunning.catch(() => undefined);
    await connection.close();
    rmSync(invoiceDir, { recursive: true, force: true });
    await system.stop();
  }
}

async function invoiceDone(client: Client, orderId: number): Promise<void> {
  await client.workflow.getHandle(invoiceWorkflowId(orderId)).result();
}

async function count(client: Client, workflowIds: string[]): Promise<Count> {
  const c: Count = {
    workflows: 0,
    workflowTasks: 0,
    activityTasks: 0,
    localActivities: 0,
    events: 0,
    other: new Map(),
    steps: [],
  };
  for (const id of workflowIds) {
    const history = await client.workflow.getHandle(id).fetchHistory();
    c.workflows += 1;
    for (const event of history.events ?? []) {
      c.events += 1;
      if (event.workflowTaskCompletedEventAttributes) c.workflowTasks += 1;
      const scheduled = event.activityTaskScheduledEventAttributes;
      if (scheduled) {
        c.activityTasks += 1;
        c.steps.push(scheduled.activityType?.name ?? '?');
      }
      const marker = event.markerRecordedEventAttributes;
      if (marker?.markerName === 'core_local_activity') {
        c.localActivities += 1;
        c.steps.push(`${localActivityType(marker)} (local)`);
        continue;
      }
      for (const [key, kind] of EVENT_KINDS) {
        if (!event[key]) continue;
        const name = kind === 'marker' ? `marker (${marker?.markerName ?? '?'})` : kind;
        c.other.set(name, (c.other.get(name) ?? 0) + 1);
      }
    }
  }
  return c;
}

/** The activity type a local activity marker records (its `data` detail, JSON). */
function localActivityType(marker: temporal.api.history.v1.IMarkerRecordedEventAttributes): string {
  const payload = marker.details?.data?.payloads?.[0];
  if (!payload?.data) return '?';
  try {
    const data = JSON.parse(Buffer.from(payload.data).toString('utf8')) as {
      activity_type?: string;
    };
    return data.activity_type ?? '?';
  } catch {
    return '?';
  }
}

function others(c: Count): string {
  return [...c.other].map(([kind, n]) => `${n} ${kind}`).join(', ') || '–';
}

async function listIds(client: Client, query: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  for await (const execution of client.workflow.list({ query })) {
    if (execution.status.name === 'COMPLETED') ids.push(execution.workflowId);
    if (ids.length >= n) break;
  }
  return ids;
}

function log(line: string): void {
  process.stderr.write(`[flow-cost] ${line}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
