import { sql } from 'kysely';
import { type AnyDb, columnsOf } from './columns';

/**
 * Deliveries we could not act on are answered 2xx (else the provider disables the endpoint), so
 * this row is the only record: not Temporal's retention. UNIQUE event_id counts redeliveries.
 */

export async function up(db: AnyDb): Promise<void> {
  const { timestamp, now, createTableWithId, counter } = columnsOf(db);
  await createTableWithId('unmatched_deliveries')
    .addColumn('reason', 'text', (col) => col.notNull())
    .addColumn('provider', 'text', (col) => col.notNull())
    .addColumn('event_id', 'text', (col) => col.notNull().unique())
    .addColumn('payload', 'text', (col) => col.notNull())
    .addColumn(...counter('delivery_count', 1))
    .addColumn('first_seen_at', timestamp, (col) => col.notNull().defaultTo(now))
    .addColumn('last_seen_at', timestamp, (col) => col.notNull().defaultTo(now))
    .addColumn('resolution', 'text', (col) =>
      col.check(
        sql`resolution is null or resolution in ('attached', 'refunded_outside', 'dismissed')`,
      ),
    )
    .addColumn('resolved_order_id', 'integer', (col) => col.references('orders.id'))
    .addColumn('resolution_note', 'text')
    .addColumn('resolved_at', timestamp)
    // An attachment names its order; the others name none; every resolution has its moment.
    .addCheckConstraint(
      'unmatched_deliveries_resolution_shape_check',
      sql`(resolution is null and resolved_at is null and resolved_order_id is null)
        or (resolution = 'attached' and resolved_at is not null and resolved_order_id is not null)
        or (resolution in ('refunded_outside', 'dismissed') and resolved_at is not null
            and resolved_order_id is null)`,
    )
    .execute();

  // The operator's list is the open entries, newest first.
  await db.schema
    .createIndex('unmatched_deliveries_open_idx')
    .on('unmatched_deliveries')
    .columns(['resolved_at', 'id'])
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('unmatched_deliveries').execute();
}
