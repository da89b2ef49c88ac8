import { PostgresAdapter, sql, type Kysely, type RawBuilder, type Selectable } from 'kysely';
import type { Database, StockSnapshotsTable } from '../schema';

export interface StockSnapshot {
  id: number;
  takenAt: string;
  ordersPaid: number;
  shipmentsRequested: number;
  shipmentsFailed: number;
  /** When the row was written (a 7-minute aggregation writes it well after `takenAt`). */
  createdAt: string;
}

export interface TakeSnapshotResult {
  snapshot: StockSnapshot;
  /** False when a snapshot for this `takenAt` already existed (a retry): that one is returned. */
  created: boolean;
}

export interface StockRepository {
  /** A retried run returns the snapshot already taken for its `takenAt`, never a second one. */
  takeSnapshot(takenAt: string): Promise<TakeSnapshotResult>;
  /** Newest first, at most `limit` (default 100): the table grows by 288 rows a day. */
  listSnapshots(options?: { limit?: number }): Promise<StockSnapshot[]>;
}

const DEFAULT_LIST_LIMIT = 100;

export function createStockRepository(db: Kysely<Database>): StockRepository {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;

  return {
    async takeSnapshot(takenAt) {
      // One text form for the UNIQUE key: SQLite compares the stored strings as they are.
      const at = normalizeTimestamp(takenAt);
      // One statement counts and inserts, so the three counts come from one consistent read.
      const inserted = await db
        .insertInto('stock_snapshots')
        .columns(['taken_at', 'orders_paid', 'shipments_requested', 'shipments_failed'])
        .expression((eb) =>
          eb
            .selectFrom('orders')
            .select([
              // A bare parameter in a SELECT list is text to PostgreSQL, which will not assign
              // text to timestamptz: say what it is.
              eb.cast(eb.val(at), postgres ? 'timestamptz' : 'text').as('taken_at'),
              countWhere(sql`status = 'paid'`).as('orders_paid'),
              countWhere(sql`shipment_status = 'requested'`).as('shipments_requested'),
              countWhere(sql`shipment_status = 'failed'`).as('shipments_failed'),
            ])
            // SQLite cannot tell INSERT … SELECT … ON CONFLICT from a join's ON without a WHERE.
            .where(sql<boolean>`1 = 1`),
        )
        .onConflict((oc) => oc.column('taken_at').doNothing())
        .returningAll()
        .executeTakeFirst();
      if (inserted) return { snapshot: toSnapshot(inserted), created: true };

      const existing = await db
        .selectFrom('stock_snapshots')
        .selectAll()
        .where('taken_at', '=', at)
        .executeTakeFirstOrThrow();
      return { snapshot: toSnapshot(existing), created: false };
    },

    async listSnapshots({ limit = DEFAULT_LIST_LIMIT } = {}) {
      const rows = await db
        .selectFrom('stock_snapshots')
        .selectAll()
        .orderBy('taken_at', 'desc')
        .orderBy('id', 'desc')
        .limit(limit)
        .execute();
      return rows.map(toSnapshot);
    },
  };
}

/** `count(CASE WHEN … THEN 1 END)`: counts matching rows, and is 0 (not NULL) on no rows. */
function countWhere(condition: RawBuilder<boolean>): RawBuilder<number> {
  return sql<number>`count(case when ${condition} then 1 end)`;
}

function normalizeTimestamp(value: string): string {
  const ms = Date.parse(value);
  if (Number.isNaN(ms)) throw new RangeError(`not a timestamp: "${value}"`);
  return new Date(ms).toISOString();
}

function toSnapshot(row: Selectable<StockSnapshotsTable>): StockSnapshot {
  return {
    id: row.id,
    takenAt: row.taken_at,
    ordersPaid: row.orders_paid,
    shipmentsRequested: row.shipments_requested,
    shipmentsFailed: row.shipments_failed,
    createdAt: row.created_at,
  };
}
