import { sql } from 'kysely';
import { type AnyDb, columnsOf } from './columns';

/** The UNIQUE constraints make at-least-once activities safe: a retry hits them, not a new row. */

export async function up(db: AnyDb): Promise<void> {
  const { timestamp, now, createTableWithId } = columnsOf(db);

  await createTableWithId('orders')
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
    .addColumn('confirmation_sent_at', timestamp)
    .addColumn('shipment_status', 'text', (col) =>
      col.check(sql`shipment_status is null or shipment_status in ('requested', 'failed')`),
    )
    .addColumn('created_at', timestamp, (col) => col.notNull().defaultTo(now))
    .addColumn('updated_at', timestamp, (col) => col.notNull().defaultTo(now))
    .execute();

  await createTableWithId('payments')
    .addColumn('order_id', 'integer', (col) => col.notNull().references('orders.id'))
    .addColumn('provider_event_id', 'text', (col) => col.notNull().unique())
    .addColumn('amount', 'integer', (col) => col.notNull().check(sql`amount >= 0`))
    .addColumn('created_at', timestamp, (col) => col.notNull().defaultTo(now))
    .addColumn('updated_at', timestamp, (col) => col.notNull().defaultTo(now))
    .execute();

  // Neither dialect indexes the referencing side of a foreign key on its own.
  await db.schema.createIndex('payments_order_id_idx').on('payments').column('order_id').execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('payments').execute();
  await db.schema.dropTable('orders').execute();
}
