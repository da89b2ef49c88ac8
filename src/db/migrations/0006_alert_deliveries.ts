import { type AnyDb, columnsOf } from './columns';

/**
 * Slack's incoming webhooks keep no Idempotency-Key: stamped after the sink's 2xx, only a crash
 * between that answer and the stamp posts an alert twice (docs/exactly-once.md, Alerts).
 */

export async function up(db: AnyDb): Promise<void> {
  const { timestamp, now } = columnsOf(db);
  await db.schema
    .createTable('alert_deliveries')
    .addColumn('idempotency_key', 'text', (col) => col.primaryKey())
    .addColumn('delivered_at', timestamp, (col) => col.notNull().defaultTo(now))
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('alert_deliveries').execute();
}
