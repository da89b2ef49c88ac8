import type { Kysely } from 'kysely';
import type { Database } from '../schema';

/**
 * `handled_by_chain`: the order workflow chain (its first run ID) that finished with a recorded
 * payment, refund, dispute or settlement (docs/exactly-once.md). A later run, or a redelivery
 * after the chain closed, reads it and applies the row no second time.
 */
export interface HandledStamp<Key> {
  /** The chain that finished with the row; null while none has, undefined when there is no row. */
  handledBy(key: Key): Promise<string | null | undefined>;
  /** Records that `chain` finished with the row; the first chain to do so stays. */
  markHandled(key: Key, chain: string): Promise<void>;
}

/** The payment, refund or dispute recorded from one provider event. */
export function eventHandledStamp(
  db: Kysely<Database>,
  table: 'payments' | 'refunds' | 'disputes',
): HandledStamp<string> {
  return handledStamp(db, table, 'provider_event_id');
}

/** The operator's settlement of an order, one per order. */
export function settlementHandledStamp(db: Kysely<Database>): HandledStamp<number> {
  return handledStamp(db, 'settlements', 'order_id');
}

function handledStamp<Key extends string | number>(
  db: Kysely<Database>,
  table: 'payments' | 'refunds' | 'disputes' | 'settlements',
  keyColumn: 'provider_event_id' | 'order_id',
): HandledStamp<Key> {
  return {
    async handledBy(key) {
      const row = await db
        .selectFrom(table)
        .select('handled_by_chain')
        .where(keyColumn, '=', key)
        .executeTakeFirst();
      return row && row.handled_by_chain;
    },
    async markHandled(key, chain) {
      // A payment's row records its last change; the other tables have no such column.
      const touched = table === 'payments' ? { updated_at: new Date().toISOString() } : {};
      await db
        .updateTable(table)
        .set({ handled_by_chain: chain, ...touched })
        .where(keyColumn, '=', key)
        .where('handled_by_chain', 'is', null)
        .execute();
    },
  };
}
