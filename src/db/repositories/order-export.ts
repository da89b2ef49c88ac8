import type { Kysely } from 'kysely';
import type { Database, OrderStatus, ShipmentStatus } from '../schema';
import { EXPORT_COLUMNS } from '../../shared/export';

/**
 * Keyset pages on the primary key, never OFFSET: each costs the same however deep, and a page
 * asked again with the same cursor holds the same orders, so a retried chunk writes the same file.
 */

/** An order as exports write it: what a person reconciling orders needs, nothing internal. */
export interface ExportedOrder {
  id: number;
  userId: number;
  customerEmail: string;
  status: OrderStatus;
  totalAmount: number;
  shipmentStatus: ShipmentStatus | null;
  confirmationSentAt: string | null;
  refundReviewRequestedAt: string | null;
  createdAt: string;
  updatedAt: string;
}

/** Both ends included; an end left out is open. */
export interface OrderIdRange {
  fromOrderId?: number;
  toOrderId?: number;
}

export interface OrderRangeSummary {
  count: number;
  firstOrderId: number | null;
  lastOrderId: number | null;
}

export interface ReadOrderPageInput {
  /** Exclusive: the last ID of the previous page (`fromOrderId - 1` for the first). */
  afterOrderId: number;
  toOrderId: number;
  limit: number;
}

export interface OrderExportRepository {
  summarizeRange(range: OrderIdRange): Promise<OrderRangeSummary>;
  readPage(input: ReadOrderPageInput): Promise<ExportedOrder[]>;
}

export function createOrderExportRepository(db: Kysely<Database>): OrderExportRepository {
  return {
    async summarizeRange(range) {
      let query = db
        .selectFrom('orders')
        .select((eb) => [
          eb.fn.countAll<number | string | bigint>().as('count'),
          eb.fn.min('id').as('first_id'),
          eb.fn.max('id').as('last_id'),
        ]);
      if (range.fromOrderId !== undefined) query = query.where('id', '>=', range.fromOrderId);
      if (range.toOrderId !== undefined) query = query.where('id', '<=', range.toOrderId);
      const row = await query.executeTakeFirstOrThrow();
      // PostgreSQL returns count(*) as a bigint, which pg hands over as a string.
      return {
        count: Number(row.count),
        firstOrderId: row.first_id === null ? null : Number(row.first_id),
        lastOrderId: row.last_id === null ? null : Number(row.last_id),
      };
    },

    async readPage({ afterOrderId, toOrderId, limit }) {
      const rows = await db
        .selectFrom('orders')
        .select(EXPORT_COLUMNS)
        .where('id', '>', afterOrderId)
        .where('id', '<=', toOrderId)
        .orderBy('id')
        .limit(limit)
        .execute();
      return rows.map((row) => ({
        id: row.id,
        userId: row.user_id,
        customerEmail: row.customer_email,
        status: row.status,
        totalAmount: row.total_amount,
        shipmentStatus: row.shipment_status,
        confirmationSentAt: row.confirmation_sent_at,
        refundReviewRequestedAt: row.refund_review_requested_at,
        createdAt: row.created_at,
        updatedAt: row.updated_at,
      }));
    },
  };
}
