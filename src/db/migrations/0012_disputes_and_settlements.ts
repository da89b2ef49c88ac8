import { type AnyDb, columnsOf } from './columns';

/**
 * `dispute_status` is stored, not derived, so the order row alone says it; its workflow writes it
 * from every recorded event, so any arrival order gives the same columns.
 */

export async function up(db: AnyDb): Promise<void> {
  const { timestamp, now, createTableWithId } = columnsOf(db);
  await createTableWithId('disputes')
    .addColumn('provider_event_id', 'text', (col) => col.notNull().unique())
    .addColumn('dispute_id', 'text', (col) => col.notNull())
    .addColumn('payment_ref', 'text', (col) => col.notNull())
    .addColumn('status', 'text', (col) => col.notNull())
    .addColumn('amount', 'integer', (col) => col.notNull())
    .addColumn('currency', 'text')
    .addColumn('evidence_due_by', 'text')
    .addColumn('reason', 'text')
    .addColumn('order_id', 'integer', (col) => col.references('orders.id'))
    .addColumn('handled_by_chain', 'text')
    .addColumn('recorded_at', timestamp, (col) => col.notNull().defaultTo(now))
    .execute();
  await db.schema
    .createIndex('disputes_payment_ref')
    .on('disputes')
    .column('payment_ref')
    .execute();
  await db.schema.createIndex('disputes_order_id').on('disputes').column('order_id').execute();
  await db.schema.alterTable('orders').addColumn('dispute_status', 'text').execute();
  await db.schema.alterTable('orders').addColumn('dispute_closed_at', timestamp).execute();
  await createTableWithId('settlements')
    .addColumn('order_id', 'integer', (col) => col.notNull().unique().references('orders.id'))
    .addColumn('settled_by', 'text', (col) => col.notNull())
    .addColumn('reason', 'text', (col) => col.notNull())
    .addColumn('payment_ids', 'text', (col) => col.notNull())
    .addColumn('handled_by_chain', 'text')
    .addColumn('settled_at', timestamp, (col) => col.notNull().defaultTo(now))
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('settlements').execute();
  await db.schema.alterTable('orders').dropColumn('dispute_closed_at').execute();
  await db.schema.alterTable('orders').dropColumn('dispute_status').execute();
  await db.schema.dropTable('disputes').execute();
}
