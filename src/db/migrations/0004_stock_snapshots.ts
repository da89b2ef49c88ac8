import { PostgresAdapter, sql, type Kysely } from 'kysely';

/**
 * `taken_at` is the moment the snapshot stands for (the run's scheduled time) and is UNIQUE: a
 * retry of the 12:05 run finds the 12:05 snapshot instead of writing a second one.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  // As in 0001: timestamptz on PostgreSQL, toISOString() text on SQLite; IDs never reused.
  const timestamp = postgres ? 'timestamptz' : 'text';
  const now = postgres ? sql`now()` : sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`;

  await db.schema
    .createTable('stock_snapshots')
    .addColumn('id', 'integer', (col) =>
      postgres ? col.primaryKey().generatedByDefaultAsIdentity() : col.primaryKey().autoIncrement(),
    )
    .addColumn('taken_at', timestamp, (col) => col.notNull().unique())
    .addColumn('orders_paid', 'integer', (col) => col.notNull().check(sql`orders_paid >= 0`))
    .addColumn('shipments_requested', 'integer', (col) =>
      col.notNull().check(sql`shipments_requested >= 0`),
    )
    .addColumn('shipments_failed', 'integer', (col) =>
      col.notNull().check(sql`shipments_failed >= 0`),
    )
    .addColumn('created_at', timestamp, (col) => col.notNull().defaultTo(now))
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('stock_snapshots').execute();
}
