import {
  PostgresAdapter,
  sql,
  type ColumnDefinitionBuilder,
  type CreateTableBuilder,
  type Kysely,
} from 'kysely';

/**
 * Adding to a balance is not idempotent, so the decision is: every award is a ledger row, UNIQUE
 * per (order, reason), and the balance moves only in the transaction that inserted it.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;

  await withTimestamps(
    db.schema
      .createTable('loyalty_accounts')
      .addColumn('user_id', 'integer', (col) => col.primaryKey())
      .addColumn('balance', 'integer', (col) =>
        col
          .notNull()
          .defaultTo(0)
          .check(sql`balance >= 0`),
      ),
    ['created_at', 'updated_at'],
    postgres,
  ).execute();

  // Append-only: a row is never updated, so it has no updated_at. A reversal would be a new
  // row with negative points and its own reason.
  await withTimestamps(
    db.schema
      .createTable('loyalty_ledger')
      .addColumn('id', 'integer', (col) => identity(col, postgres))
      .addColumn('user_id', 'integer', (col) => col.notNull())
      .addColumn('order_id', 'integer', (col) => col.notNull().references('orders.id'))
      .addColumn('points', 'integer', (col) => col.notNull().check(sql`points <> 0`))
      .addColumn('reason', 'text', (col) => col.notNull())
      // The judge of "awarded once": a retried or concurrent award for the same order and
      // reason hits it. Its leading order_id column also serves the foreign key's lookups.
      .addUniqueConstraint('loyalty_ledger_order_id_reason_key', ['order_id', 'reason']),
    ['created_at'],
    postgres,
  ).execute();

  await db.schema
    .createIndex('loyalty_ledger_user_id_idx')
    .on('loyalty_ledger')
    .column('user_id')
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('loyalty_ledger').execute();
  await db.schema.dropTable('loyalty_accounts').execute();
}

/** As in 0001: IDs are never reused, on either dialect. */
function identity(col: ColumnDefinitionBuilder, postgres: boolean): ColumnDefinitionBuilder {
  return postgres
    ? col.primaryKey().generatedByDefaultAsIdentity()
    : col.primaryKey().autoIncrement();
}

/** As in 0001. */
function withTimestamps<T extends string, C extends string>(
  table: CreateTableBuilder<T, C>,
  names: readonly string[],
  postgres: boolean,
): CreateTableBuilder<T, C> {
  const type = postgres ? 'timestamptz' : 'text';
  const now = postgres ? sql`now()` : sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`;
  return names.reduce(
    (builder, name) => builder.addColumn(name, type, (col) => col.notNull().defaultTo(now)),
    table,
  );
}
