import { performance } from 'node:perf_hooks';

/** How a closed loop went: every operation's latency, and how many failed. */
export interface LoopResult {
  ok: number;
  failed: number;
  /** From the first operation's start until the last one ended (in-flight ones are awaited). */
  elapsedMs: number;
  /** Latency of each successful operation, in milliseconds, in completion order. */
  latenciesMs: number[];
  firstError?: string;
}

export interface ClosedLoopOptions {
  /** Operations in flight at any time: each of this many lanes starts its next one when one ends. */
  concurrency: number;
  /** No operation starts after this long; those in flight are awaited. */
  durationMs: number;
  /** Optional cap on the number of operations started. */
  maxOps?: number;
  /** One operation; `index` counts from 0 across lanes. Throws (or rejects) on failure. */
  op: (index: number) => Promise<void>;
}

/**
 * A closed-loop load generator: a fixed number of lanes, each doing one operation after another.
 * Rate then follows latency (Little's law), which is what a fixed-concurrency client sees.
 */
export async function closedLoop(options: ClosedLoopOptions): Promise<LoopResult> {
  const started = performance.now();
  const deadline = started + options.durationMs;
  const maxOps = options.maxOps ?? Number.POSITIVE_INFINITY;
  const latenciesMs: number[] = [];
  let next = 0;
  let failed = 0;
  let firstError: string | undefined;

  const lane = async () => {
    while (performance.now() < deadline && next < maxOps) {
      const index = next++;
      const t0 = performance.now();
      try {
        await options.op(index);
        latenciesMs.push(performance.now() - t0);
      } catch (error) {
        failed += 1;
        firstError ??= error instanceof Error ? error.message : String(error);
      }
    }
  };
  await Promise.all(Array.from({ length: options.concurrency }, lane));
  return {
    ok: latenciesMs.length,
    failed,
    elapsedMs: performance.now() - started,
    latenciesMs,
    firstError,
  };
}
