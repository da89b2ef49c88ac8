import type { Kysely } from 'kysely';
import type { Database } from '../schema';

export interface AlertDeliveriesRepository {
  wasDelivered(idempotencyKey: string): Promise<boolean>;
  /** Stamps the key; true only for the call that stamped it first. */
  markDelivered(idempotencyKey: string): Promise<boolean>;
}

export function createAlertDeliveriesRepository(db: Kysely<Database>): AlertDeliveriesRepository {
  return {
    async wasDelivered(idempotencyKey) {
      const row = await db
        .selectFrom('alert_deliveries')
        .select('idempotency_key')
        .where('idempotency_key', '=', idempotencyKey)
        .executeTakeFirst();
      return row !== undefined;
    },
    async markDelivered(idempotencyKey) {
      const rows = await db
        .insertInto('alert_deliveries')
        .values({ idempotency_key: idempotencyKey })
        .onConflict((oc) => oc.column('idempotency_key').doNothing())
        .returning('idempotency_key')
        .execute();
      return rows.length > 0;
    },
  };
}
