import { setTimeout as delay } from 'node:timers/promises';
import { createOrdersRepository, type DatabaseHandle } from '../../src/db';
import type { Arms } from './arms';
import type { ChaosReport } from './chaos-report';
import { NAMESPACE, READY_TIMEOUT_MS, WEBHOOK_SECRET, type Dirs, type Stack } from './chaos-stack';
import type { PlannedOrder } from './evidence';
import type { Disruption } from './invariants';
import type { ChaosOptions } from './options';
import { deliverEvent, type PaymentEvent } from './provider';
import type { Random } from './random';
import { seconds } from './seconds';
import { waitForTemporal } from './temporal-server';
import type { ChaosPoint } from '../../harness/hooks/worker-hook';

/**
 * The storm of a chaos run: the orders and their payment events planned from the seed, delivered
 * at random moments, while the planned chaos actions (kills, armed moments, a Temporal restart, a
 * PostgreSQL outage) run at theirs.
 */

interface StormContext {
  stack: Stack;
  arms: Arms;
  events: PaymentEvent[];
  accepted: Set<string>;
  random: Random;
  options: ChaosOptions;
  dirs: Dirs;
  report: ChaosReport;
  log: (line: string) => void;
  signal: AbortSignal;
}

/** Webhook deliveries and chaos actions side by side; returns when both are over. */
export async function storm(ctx: StormContext): Promise<Disruption[]> {
  const { stack, events, accepted, random, options, report, log, signal } = ctx;
  const disruptions: Disruption[] = [];
  const chaosStart = Date.now();
  report.stormStartedAt = chaosStart;
  const deliveriesDone = deliverAll(events, {
    baseUrl: stack.baseUrl,
    secret: WEBHOOK_SECRET,
    random,
    stats: report.deliveries,
    accepted,
    windowMs: options.deliveryWindowMs,
    signal,
  });
  // If the chaos fails, the deliveries still must end before the stack is torn down.
  try {
    for (const action of planActions(options, random)) {
      const wait = chaosStart + action.at - Date.now();
      if (wait > 0) await delay(wait, undefined, { signal });
      await runAction(action, { ...ctx, disruptions });
    }
  } finally {
    await deliveriesDone;
  }
  log(
    `chaos over after ${seconds(Date.now() - chaosStart)}: ${accepted.size}/${events.length} events accepted; waiting for every workflow to complete`,
  );
  return disruptions;
}

async function runAction(
  action: ChaosAction,
  ctx: StormContext & { disruptions: Disruption[] },
): Promise<void> {
  const { stack, random, report, log, signal, disruptions } = ctx;
  switch (action.kind) {
    case 'worker-kill': {
      const running = stack.workers.filter((w) => w.alive);
      if (running.length === 0) {
        report.skipped.push('random worker kill: no worker was running');
        return;
      }
      const worker = random.pick(running);
      const pid = worker.pid!;
      worker.kill('SIGKILL');
      report.kills.push({ kind: 'random', at: Date.now(), worker: worker.name, pid });
      log(`SIGKILL ${worker.name} (pid ${pid}) at a random moment`);
      return;
    }
    case 'arm': {
      ctx.arms.add(action.point);
      log(`armed ${action.point}`);
      return;
    }
    case 'server-restart': {
      const at = Date.now();
      stack.temporal.kill('SIGKILL', action.downMs);
      log(`SIGKILL Temporal server; restarting it in ${seconds(action.downMs)}`);
      await stack.temporal.exited();
      await waitForTemporal(stack.temporalAddress, NAMESPACE, READY_TIMEOUT_MS);
      const readyAfterMs = Date.now() - at;
      report.serverRestarts.push({ at, downMs: action.downMs, readyAfterMs });
      disruptions.push({ from: at, to: Date.now(), what: 'Temporal server restart' });
      log(`Temporal server back after ${seconds(readyAfterMs)}`);
      return;
    }
    case 'db-outage': {
      const at = Date.now();
      await stack.postgres.stopImmediately();
      log(`PostgreSQL stopped (immediate) for ${seconds(action.downMs)}`);
      await delay(action.downMs, undefined, { signal });
      await stack.postgres.start();
      report.dbOutages.push({ at, downMs: Date.now() - at });
      disruptions.push({ from: at, to: Date.now(), what: 'PostgreSQL outage' });
      log(`PostgreSQL back after ${seconds(Date.now() - at)}`);
      return;
    }
  }
}

type ChaosAction =
  | { at: number; kind: 'worker-kill' }
  | { at: number; kind: 'arm'; point: ChaosPoint }
  | { at: number; kind: 'server-restart'; downMs: number }
  | { at: number; kind: 'db-outage'; downMs: number };

/** Chaos actions at random moments; sequential, so outages never overlap one another. */
function planActions(options: ChaosOptions, random: Random): ChaosAction[] {
  const window = options.deliveryWindowMs;
  const end = window + options.chaosTailMs;
  const between = (from: number, to: number) => random.int(Math.round(from), Math.round(to));
  const actions: ChaosAction[] = [];
  const repeat = (n: number, make: () => ChaosAction) => {
    for (let i = 0; i < n; i++) actions.push(make());
  };
  repeat(options.workerKills, () => ({ at: between(0.1 * window, end), kind: 'worker-kill' }));
  // Payments are recorded while events arrive: arm that moment inside the delivery window.
  repeat(options.commitKills, () => ({
    at: between(0.1 * window, 0.7 * window),
    kind: 'arm',
    point: 'payment-commit',
  }));
  repeat(options.warehouseKills, () => ({
    at: between(0.15 * window, 0.9 * window),
    kind: 'arm',
    point: 'warehouse-201',
  }));
  repeat(options.mailKills, () => ({
    at: between(0.15 * window, 0.9 * window),
    kind: 'arm',
    point: 'mail-stamp',
  }));
  repeat(options.serverRestarts, () => ({
    at: between(0.2 * window, end - options.serverDownMs[1]),
    kind: 'server-restart',
    downMs: between(...options.serverDownMs),
  }));
  repeat(options.dbOutages, () => ({
    at: between(0.2 * window, end - options.dbDownMs[1]),
    kind: 'db-outage',
    downMs: between(...options.dbDownMs),
  }));
  return actions.sort((a, b) => a.at - b.at);
}

/** Orders in the database (as the shop created them), and the payment events for them. */
export async function planOrders(
  db: DatabaseHandle,
  options: ChaosOptions,
  random: Random,
): Promise<{ orders: PlannedOrder[]; events: PaymentEvent[] }> {
  const repository = createOrdersRepository(db.db);
  const orders: PlannedOrder[] = [];
  const events: PaymentEvent[] = [];
  const runTag = options.seed.toString(36);
  while (events.length < options.events) {
    const userId = random.int(1, Math.max(1, options.users));
    const amount = random.int(5, 500) * 100;
    const { order } = await repository.createWithIdempotencyKey({
      userId,
      customerEmail: `customer${userId}@example.com`,
      totalAmount: amount,
      idempotencyKey: `chaos-${runTag}-${orders.length + 1}`,
    });
    const paidTwice =
      events.length + 2 <= options.events && random.chance(options.doubleChargeRate);
    const planned: PlannedOrder = { id: order.id, userId, amount, eventIds: [] };
    for (let i = 0; i < (paidTwice ? 2 : 1); i++) {
      const id = `evt_chaos_${runTag}_${events.length + 1}`;
      planned.eventIds.push(id);
      events.push({ id, orderId: order.id, amount });
    }
    orders.push(planned);
  }
  return { orders, events };
}

/** First deliveries at random moments over the window; each event 2–3 times (see provider.ts). */
async function deliverAll(
  events: PaymentEvent[],
  options: Omit<Parameters<typeof deliverEvent>[1], 'signal'> & {
    windowMs: number;
    signal: AbortSignal;
  },
): Promise<void> {
  await Promise.all(
    events.map(async (event) => {
      await delay(options.random.int(0, options.windowMs), undefined, { signal: options.signal });
      await deliverEvent(event, options);
    }),
  );
}
