import { setTimeout as delay } from 'node:timers/promises';

export interface EventuallyOptions {
  /** Default: 30 s. */
  timeoutMs?: number;
  /** Default: 200 ms. */
  intervalMs?: number;
}

/**
 * Retries `check` (an assertion, or anything that throws until it holds) until it passes, for
 * what a server, a worker or a process makes visible eventually. Returns what `check` returned;
 * when time is up, fails with its last error.
 */
export async function eventually<T>(
  check: () => Promise<T> | T,
  { timeoutMs = 30_000, intervalMs = 200 }: EventuallyOptions = {},
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await delay(intervalMs);
    }
  }
}

/** `eventually` for a plain condition: waits until it is true, or fails naming `what`. */
export async function until(
  condition: () => Promise<boolean> | boolean,
  what = 'the condition',
  options: EventuallyOptions = {},
): Promise<void> {
  await eventually(async () => {
    if (!(await condition())) throw new Error(`${what} did not hold in time`);
  }, options);
}
