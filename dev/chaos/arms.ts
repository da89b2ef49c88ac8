import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ChaosPoint } from '../../harness/hooks/worker-hook';

/**
 * The kills the driver still wants at each moment the worker hook watches. An arm is a file
 * named after the moment: the first worker that reaches the moment deletes it (one winner) and
 * freezes until the driver kills it. Several kills of one kind are queued and armed one after
 * another, a pause apart, so two workers are not killed at the same instant by the same arm.
 */
export class Arms {
  private readonly wanted: Record<ChaosPoint, number> = {
    'payment-commit': 0,
    'warehouse-201': 0,
    'mail-stamp': 0,
  };
  private readonly timers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly dir: string,
    private readonly pauseMs: number,
  ) {}

  /** One more kill wanted at this moment. */
  add(point: ChaosPoint): void {
    this.wanted[point] += 1;
    if (this.wanted[point] === 1) this.arm(point);
  }

  /** The hook claimed the arm (its file is gone); arm the next one after the pause. */
  fired(point: ChaosPoint): void {
    this.wanted[point] = Math.max(0, this.wanted[point] - 1);
    if (this.wanted[point] === 0) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (this.wanted[point] > 0) this.arm(point);
    }, this.pauseMs);
    this.timers.add(timer);
  }

  /** Removes every arm; returns how many kills of each kind were wanted but never came. */
  disarmAll(): Record<ChaosPoint, number> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    const left = { ...this.wanted };
    for (const point of Object.keys(this.wanted) as ChaosPoint[]) {
      this.wanted[point] = 0;
      rmSync(path.join(this.dir, point), { force: true });
    }
    return left;
  }

  private arm(point: ChaosPoint): void {
    writeFileSync(path.join(this.dir, point), '');
  }
}
