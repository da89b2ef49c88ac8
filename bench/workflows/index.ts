import {
  condition,
  defineSignal,
  proxyActivities,
  proxyLocalActivities,
  proxySinks,
  setHandler,
  type Sinks,
} from '@temporalio/workflow';
import type { BenchActivities } from '../activities';

/**
 * Bench-only workflows, bundled on their own (bench/lib/bundles.ts) and run by a worker on their
 * own task queue beside the payments worker, with the same worker settings. Deterministic code
 * under the same rules as src/workflows (README there).
 */

// The profile of the payment flow's database activities (src/workflows/payment.ts), so the
// baselines pay the same scheduling costs; the bodies do nothing.
const { noop } = proxyActivities<BenchActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

// The same steps as local activities, as the payment flow runs its short steps
// (src/workflows/payment.ts, order.ts).
const local = proxyLocalActivities<BenchActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
  localRetryThreshold: '10 seconds',
});

/** The baseline of the end-to-end benchmark: one workflow, one no-op activity. */
export async function benchNoopWorkflow(): Promise<void> {
  await noop();
}

/** Input of the mirror flow: the key of its order-shaped workflow. */
export interface MirrorInput {
  orderKey: string;
}

/** A recorded "payment", handed to the mirror of the order workflow. */
export const mirrorPaymentSignal = defineSignal<[string]>('mirrorPaymentRecorded');

/**
 * The payment workflow's shape with no-op bodies: one local activity ("record the payment"), then
 * one that signal-with-starts the order-shaped workflow, as handOverToOrder does.
 */
export async function benchMirrorPaymentWorkflow(input: MirrorInput): Promise<void> {
  await local.noop();
  await local.handOverMirror({ orderKey: input.orderKey });
}

/**
 * The order workflow's shape on its happy path: takes the handed-over event, then runs its four
 * steps one after another, no-op here: warehouse (activity), shipment status (local), mail
 * (activity), loyalty points (local).
 */
export async function benchMirrorOrderWorkflow(): Promise<void> {
  const pending: string[] = [];
  setHandler(mirrorPaymentSignal, (eventId) => void pending.push(eventId));
  await condition(() => pending.length > 0);
  while (pending.shift() !== undefined) {
    await noop();
    await local.noop();
    await noop();
    await local.noop();
  }
}

/** Lets a waiting workflow finish. */
export const releaseSignal = defineSignal('release');

/** Calls from bench workflows into the worker process, outside the history. */
export interface BenchSinks extends Sinks {
  bench: {
    /** A waiting workflow has run its first activation. */
    arrived(): void;
  };
}

const { bench } = proxySinks<BenchSinks>();

/**
 * An open workflow for the worker-memory benchmark: tells the worker it runs (a sink, which costs
 * the server nothing), then waits for a signal that never comes during the measurement.
 */
export async function benchWaitingWorkflow(): Promise<void> {
  let released = false;
  setHandler(releaseSignal, () => void (released = true));
  bench.arrived();
  await condition(() => released);
}
