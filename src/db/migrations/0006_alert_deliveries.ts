import { PostgresAdapter, sql, type Kysely } from 'kysely';

/**
 * Slack's incoming webhooks keep no Idempotency-Key: stamped after the sink's 2xx, only a crash
 * between that answer and the stamp posts an alert twice (docs/exactly-once.md, Alerts).
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  const timestamp = postgres ? 'timestamptz' : 'text';
  const now = postgres ? sql`now()` : sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`;
  await db.schema
    .createTable('alert_deliveries')
    .addColumn('idempotency_key', 'text', (col) => col.primaryKey())
    .addColumn('delivered_at', timestamp, (col) => col.notNull().defaultTo(now))
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('alert_deliveries').execute();
}
