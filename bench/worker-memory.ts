import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { PAYMENTS_TASK_QUEUE } from '../src/shared/constants';
import {
  orderWorkflowId,
  paymentRecordedSignal,
  type OrderPaymentEvent,
} from '../src/shared/order';
import type { orderWorkflow } from '../src/workflows';
import type { benchWaitingWorkflow } from './workflows';
import { readBenchArgs } from './lib/args';
import { closedLoop } from './lib/loop';
import { BENCH_TASK_QUEUE } from './lib/names';
import { rssBytes } from './lib/procstat';
import { machineFacts, table, writeResults, type Cell } from './lib/report';
import { fmt } from './lib/stats';
import { startSystem, watchdog, type System } from './lib/system';

/**
 * (d) Worker memory per 1,000 open workflows. The worker runs in a process of its own; the
 * driver reads its RSS from /proc and asks it for its heap (after a forced GC). Two kinds of
 * open workflow:
 *  - waiting: a bench workflow that waits for a signal (the least a workflow can hold);
 *  - order: our order workflow, parked on a durable timer because the warehouse answered 429
 *    with Retry-After: 600 (what a warehouse outage leaves open in production);
 * each with the SDK's default workflow cache and with the cache off (maxCachedWorkflows: 0).
 */

type Kind = 'waiting' | 'order';

interface Config {
  kind: Kind;
  /** Undefined: the SDK default. */
  maxCachedWorkflows: number | undefined;
  /** Open workflows (besides the warm-up ones) at each sample. */
  steps: number[];
}

const SETTINGS: Record<'full' | 'quick', Config[]> = {
  full: [
    { kind: 'waiting', maxCachedWorkflows: undefined, steps: [1_000, 2_000] },
    { kind: 'waiting', maxCachedWorkflows: 0, steps: [1_000] },
    { kind: 'order', maxCachedWorkflows: undefined, steps: [1_000] },
  ],
  quick: [
    { kind: 'waiting', maxCachedWorkflows: undefined, steps: [200] },
    { kind: 'waiting', maxCachedWorkflows: 0, steps: [200] },
  ],
};

/** Open before the first sample, so one-off costs (code loading, first context) are not counted. */
const WARMUP = 20;
const START_CONCURRENCY = 32;

interface Sample {
  open: number;
  rssMiB: number;
  heapUsedMiB: number;
  cachedWorkflows: number;
  /** Seconds to start this step's workflows and see them all parked. */
  settleSeconds: number;
}

interface Measured {
  config: Config;
  maxCachedInForce: number;
  samples: Sample[];
}

const runTag = `${Date.now().toString(36)}${process.pid}`;

async function main(): Promise<void> {
  const args = await readBenchArgs(
    'Worker memory per 1,000 open workflows (a waiting bench workflow, our order workflow on a durable timer), with the default workflow cache and with it off.',
  );
  const configs = args.quick ? SETTINGS.quick : SETTINGS.full;
  const startedAt = Date.now();
  const facts = machineFacts();
  const results: Measured[] = [];
  for (const config of configs) results.push(await measure(config));
  const file = await writeResults({
    name: 'worker-memory',
    title: 'Worker memory per 1,000 open workflows',
    args,
    facts,
    startedAt,
    setup: {
      worker:
        'bench/hosts/worker-host.ts in a process of its own (node --expose-gc), production payments worker + bench worker, SDK defaults otherwise (reuseV8Context on)',
      measured: `RSS from /proc/<pid>/status (main thread, workflow thread and the Rust core together) and the main thread's V8 heap, each after a forced GC and 1 s of quiet; ${WARMUP} workflows open before the first sample`,
      'Temporal server':
        'the Temporal CLI dev server, in-memory state, a fresh one per configuration',
    },
    sections: [summarySection(results), samplesSection(results)],
  });
  log(`wrote ${path.relative(process.cwd(), file)}`);
}

async function measure(config: Config): Promise<Measured> {
  const label = describe(config);
  log(`${label}: starting`);
  const system = await startSystem({
    worker: true,
    maxCachedWorkflows: config.maxCachedWorkflows,
    workerNodeFlags: ['--expose-gc'],
  });
  const disarm = watchdog(4 * 60_000, () => system.stop());
  try {
    // The order workflow's warehouse call is answered 429, so each run parks on a 10-minute timer.
    system.warehouse.setMode({ kind: 'rate_limit', retryAfter: '600' });
    let open = 0;
    const openMore = async (count: number) => {
      const t0 = Date.now();
      const first = open;
      const loop = await closedLoop({
        concurrency: START_CONCURRENCY,
        durationMs: 10 * 60_000,
        maxOps: count,
        op: (i) => startOne(system, config.kind, first + i),
      });
      if (loop.failed > 0) throw new Error(`${loop.failed} starts failed: ${loop.firstError}`);
      open += count;
      await parked(system, config.kind, open);
      return (Date.now() - t0) / 1000;
    };

    await openMore(WARMUP);
    const samples: Sample[] = [await sample(system, open, 0)];
    for (const step of config.steps) {
      const settleSeconds = await openMore(step - (open - WARMUP));
      samples.push(await sample(system, open, settleSeconds));
      log(`${label}: ${open} open, RSS ${fmt(samples.at(-1)!.rssMiB)} MiB`);
    }
    const status = await system.worker!.call('status', {});
    return { config, maxCachedInForce: status.maxCachedWorkflows, samples };
  } finally {
    disarm();
    await system.stop();
  }
}

async function startOne(system: System, kind: Kind, index: number): Promise<void> {
  if (kind === 'waiting') {
    await system.client.workflow.start<typeof benchWaitingWorkflow>('benchWaitingWorkflow', {
      workflowId: `memory_${runTag}_${index}`,
      taskQueue: BENCH_TASK_QUEUE,
    });
    return;
  }
  // As handOverToOrder delivers a first payment to the order's workflow.
  const orderId = 1_000_000 + index;
  const event: OrderPaymentEvent = {
    eventId: `memory_${runTag}_${index}`,
    paymentId: index + 1,
    amount: 5400,
    firstForOrder: true,
  };
  await system.client.workflow.signalWithStart<typeof orderWorkflow, [OrderPaymentEvent]>(
    'orderWorkflow',
    {
      workflowId: orderWorkflowId(orderId),
      taskQueue: PAYMENTS_TASK_QUEUE,
      args: [{ orderId }],
      signal: paymentRecordedSignal,
      signalArgs: [event],
    },
  );
}

/** Waits until `open` workflows have reached their wait and the worker has nothing in flight. */
async function parked(system: System, kind: Kind, open: number): Promise<void> {
  const deadline = Date.now() + 3 * 60_000;
  let quiet = 0;
  while (quiet < 4) {
    if (Date.now() > deadline)
      throw new Error(`${open} ${kind} workflows did not park within 3 minutes`);
    await delay(250);
    const status = await system.worker!.call('status', {});
    const arrived = kind === 'waiting' ? status.arrivals : system.warehouse.requests.length;
    const idle = status.inFlightActivations === 0 && status.inFlightActivities === 0;
    quiet = arrived >= open && idle ? quiet + 1 : 0;
  }
}

async function sample(system: System, open: number, settleSeconds: number): Promise<Sample> {
  await system.worker!.call('status', { gc: true });
  await delay(1_000);
  const status = await system.worker!.call('status', { gc: true });
  return {
    open,
    rssMiB: rssBytes(system.worker!.pid) / 2 ** 20,
    heapUsedMiB: status.memory.heapUsed / 2 ** 20,
    cachedWorkflows: status.cachedWorkflows,
    settleSeconds,
  };
}

function describe(config: Config): string {
  const cache =
    config.maxCachedWorkflows === undefined
      ? 'default cache'
      : `maxCachedWorkflows ${config.maxCachedWorkflows}`;
  return `${config.kind === 'waiting' ? 'bench waiting workflow' : 'order workflow parked on a timer'}, ${cache}`;
}

function summarySection(results: Measured[]): string {
  const rows: Cell[][] = results.map(({ config, maxCachedInForce, samples }) => {
    const first = samples[0]!;
    const last = samples.at(-1)!;
    const added = last.open - first.open;
    const perThousand = (x: number) => (x / added) * 1000;
    return [
      describe(config),
      maxCachedInForce,
      fmt(first.rssMiB),
      fmt(last.rssMiB),
      last.open - WARMUP,
      fmt(perThousand(last.rssMiB - first.rssMiB)),
      fmt(perThousand(last.heapUsedMiB - first.heapUsedMiB)),
      last.cachedWorkflows,
    ];
  });
  return [
    '## Per 1,000 open workflows',
    '',
    table(
      [
        'open workflows',
        'maxCachedWorkflows in force',
        'RSS before MiB',
        'RSS after MiB',
        'added',
        'RSS MiB per 1,000',
        'main-thread heap MiB per 1,000',
        'cached at the end',
      ],
      rows,
    ),
    '',
    "Workflow state lives in the workflow thread's V8 isolate (reuseV8Context), which the main thread's heap figure does not include: RSS is the number to plan with.",
  ].join('\n');
}

function samplesSection(results: Measured[]): string {
  return [
    '## Every sample',
    '',
    table(
      [
        'configuration',
        'open',
        'RSS MiB',
        'main-thread heap MiB',
        'cached',
        'seconds to start and park this step',
      ],
      results.flatMap(({ config, samples }) =>
        samples.map((s) => [
          describe(config),
          s.open,
          fmt(s.rssMiB),
          fmt(s.heapUsedMiB),
          s.cachedWorkflows,
          s.settleSeconds ? fmt(s.settleSeconds) : '–',
        ]),
      ),
    ),
  ].join('\n');
}

function log(line: string): void {
  process.stderr.write(`[worker-memory] ${line}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
