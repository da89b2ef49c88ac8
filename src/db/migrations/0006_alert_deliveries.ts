import { PostgresAdapter, sql, type Kysely } from 'kysely';

/**
 * Alerts the sink has accepted, by their Idempotency-Key (`alert-<workflow>-<run>`, or the refund
 * review's). Slack's incoming webhooks keep no key: an attempt that posted and died before
 * reporting would post the alert again on retry. With the key stamped after the sink's 2xx, only
 * a crash between that answer and the stamp can (docs/exactly-once.md, Alerts).
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
