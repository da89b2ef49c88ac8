import {
  PostgresAdapter,
  sql,
  type ColumnDefinitionBuilder,
  type CreateTableBuilder,
  type Kysely,
} from 'kysely';

/** The UNIQUE constraints make at-least-once activities safe: a retry hits them, not a new row. */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;

  await withTimestamps(
    db.schema
      .createTable('orders')
      .addColumn('id', 'integer', (col) => identity(col, postgres))
      .addColumn('user_id', 'integer', (col) => col.notNull())
      .addColumn('customer_email', 'text', (col) => col.notNull())
      .addColumn('status', 'text', (col) =>
        col
          .notNull()
          .defaultTo('pending')
          .check(sql`status in ('pending', 'paid')`),
      )
      .addColumn('total_amount', 'integer', (col) => col.notNull().check(sql`total_amount >= 0`))
      .addColumn('idempotency_key', 'text', (col) => col.unique())
      .addColumn('idempotency_fingerprint', 'text')
      .addColumn('confirmation_sent_at', postgres ? 'timestamptz' : 'text')
      .addColumn('shipment_status', 'text', (col) =>
        col.check(sql`shipment_status is null or shipment_status in ('requested', 'failed')`),
      ),
    postgres,
  ).execute();

  await withTimestamps(
    db.schema
      .createTable('payments')
      .addColumn('id', 'integer', (col) => identity(col, postgres))
      .addColumn('order_id', 'integer', (col) => col.notNull().references('orders.id'))
      .addColumn('provider_event_id', 'text', (col) => col.notNull().unique())
      .addColumn('amount', 'integer', (col) => col.notNull().check(sql`amount >= 0`)),
    postgres,
  ).execute();

  // Neither dialect indexes the referencing side of a foreign key on its own.
  await db.schema.createIndex('payments_order_id_idx').on('payments').column('order_id').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('payments').execute();
  await db.schema.dropTable('orders').execute();
}

/**
 * IDs are never reused, on either dialect: an order ID ends up in the warehouse's idempotency
 * key, and a reused ID would make the warehouse take a new order's shipment for an old one.
 * (SQLite reuses the highest rowid after a delete unless AUTOINCREMENT is set.)
 */
function identity(col: ColumnDefinitionBuilder, postgres: boolean): ColumnDefinitionBuilder {
  return postgres
    ? col.primaryKey().generatedByDefaultAsIdentity()
    : col.primaryKey().autoIncrement();
}

/**
 * PostgreSQL keeps a real `timestamptz`; SQLite keeps text in exactly the format of
 * `Date.prototype.toISOString()`, so the strings sort and compare like the instants they name.
 */
function withTimestamps<T extends string, C extends string>(
  table: CreateTableBuilder<T, C>,
  postgres: boolean,
): CreateTableBuilder<T, C> {
  const type = postgres ? 'timestamptz' : 'text';
  const now = postgres ? sql`now()` : sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`;
  return table
    .addColumn('created_at', type, (col) => col.notNull().defaultTo(now))
    .addColumn('updated_at', type, (col) => col.notNull().defaultTo(now));
}
