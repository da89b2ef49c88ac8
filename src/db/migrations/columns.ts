import { PostgresAdapter, sql, type ColumnDefinitionBuilder, type Kysely } from 'kysely';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyDb = Kysely<any>;

/**
 * The column pieces of every migration, as 0001 made them. Applied databases hold what they
 * produce: test/db/migration-statements.test.ts fails if a change here alters any migration.
 */
export function columnsOf(db: AnyDb) {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  return {
    postgres,
    // SQLite's text is exactly toISOString(), so the strings sort and compare as the instants.
    timestamp: postgres ? 'timestamptz' : 'text',
    now: postgres ? sql`now()` : sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`,
    // IDs never reused (SQLite reuses the highest rowid unless AUTOINCREMENT): an order ID is in
    // the warehouse's idempotency key, which would take a new order's shipment for an old one's.
    createTableWithId: (table: string) =>
      db.schema
        .createTable(table)
        .addColumn('id', 'integer', (col) =>
          postgres
            ? col.primaryKey().generatedByDefaultAsIdentity()
            : col.primaryKey().autoIncrement(),
        ),
    // A count that starts at `start` and never goes below it, the database its judge.
    counter: (column: string, start: number) =>
      [
        column,
        'integer',
        (col: ColumnDefinitionBuilder) =>
          col
            .notNull()
            .defaultTo(start)
            .check(sql.raw(`${column} >= ${start}`)),
      ] as const,
  } as const;
}
