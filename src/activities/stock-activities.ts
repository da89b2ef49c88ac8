import { Context } from '@temporalio/activity';
import type { StockRepository } from '../db';
import { atCrashPoint } from './crash-points';

export interface StockActivityDeps {
  stock: StockRepository;
  /** Extra ms: the seed's AggregateStock may run 7 minutes; tests watch a run outlast its slot. */
  aggregationDelayMs?: number;
}

export interface AggregateStockInput {
  /** The run's scheduled time; absent, this activity's first schedule time (same across retries). */
  scheduledAt?: string;
}

export interface AggregateStockResult {
  snapshotId: number;
  takenAt: string;
  /** False when a retry found the snapshot an earlier attempt had already written. */
  created: boolean;
  ordersPaid: number;
  shipmentsRequested: number;
  shipmentsFailed: number;
}

/** Well inside the workflow's 30 s heartbeat timeout; the SDK batches heartbeats. */
const HEARTBEAT_STEP_MS = 1_000;

export function createStockActivities(deps: StockActivityDeps) {
  const delayMs = deps.aggregationDelayMs ?? 0;
  return {
    /**
     * Heartbeats throughout, so a worker dying in minute 3 of 7 is noticed after the heartbeat
     * timeout, not the 10-minute start-to-close. A retry returns the snapshot already written.
     */
    async aggregateStock(input: AggregateStockInput): Promise<AggregateStockResult> {
      const ctx = Context.current();
      const takenAt = input.scheduledAt ?? new Date(ctx.info.scheduledTimestampMs).toISOString();

      const started = Date.now();
      for (let elapsed = 0; elapsed < delayMs; elapsed = Date.now() - started) {
        ctx.heartbeat({ elapsedMs: elapsed });
        // Rejects with CancelledFailure once the server reports the run cancelled.
        await ctx.sleep(Math.min(HEARTBEAT_STEP_MS, delayMs - elapsed));
      }
      ctx.heartbeat({ elapsedMs: Date.now() - started });

      const { snapshot, created } = await atCrashPoint('aggregateStock.commit', () =>
        deps.stock.takeSnapshot(takenAt),
      );
      ctx.log.info(created ? 'stock snapshot taken' : 'stock snapshot already taken', {
        snapshotId: snapshot.id,
        takenAt: snapshot.takenAt,
        ordersPaid: snapshot.ordersPaid,
        shipmentsRequested: snapshot.shipmentsRequested,
        shipmentsFailed: snapshot.shipmentsFailed,
      });
      return {
        snapshotId: snapshot.id,
        takenAt: snapshot.takenAt,
        created,
        ordersPaid: snapshot.ordersPaid,
        shipmentsRequested: snapshot.shipmentsRequested,
        shipmentsFailed: snapshot.shipmentsFailed,
      };
    },
  };
}

export type StockActivities = ReturnType<typeof createStockActivities>;
