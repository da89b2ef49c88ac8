import { Context } from '@temporalio/activity';
import type { StockRepository } from '../db';
import { atCrashPoint } from './crash-points';

export interface StockActivityDeps {
  stock: StockRepository;
  /**
   * Extra time the aggregation takes, in ms (default 0). The seed's AggregateStock may run for
   * 7 minutes; tests and the demo set this to watch a run outlast its schedule interval.
   */
  aggregationDelayMs?: number;
}

export interface AggregateStockInput {
  /**
   * The moment the snapshot stands for (ISO-8601): the scheduled time of the run. Absent, the
   * time this activity was first scheduled, which stays the same across its retries.
   */
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

/**
 * Heartbeat (and check for cancellation) this often while the aggregation runs: well inside
 * the 30 s heartbeat timeout the workflow gives it. The SDK batches heartbeats to the server.
 */
const HEARTBEAT_STEP_MS = 1_000;

/** Activities of the scheduled stock aggregation (the seed's AggregateStock job). */
export function createStockActivities(deps: StockActivityDeps) {
  const delayMs = deps.aggregationDelayMs ?? 0;
  return {
    /**
     * Takes the stock snapshot for one scheduled run. Heartbeats throughout, so a worker that
     * dies in minute 3 of a 7-minute run is noticed after the heartbeat timeout rather than the
     * 10-minute start-to-close timeout, and a cancelled run stops at its next step. Idempotent:
     * a retry for the same `scheduledAt` returns the snapshot already written.
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
