import { type AnyDb, columnsOf } from './columns';

/**
 * Once per provider event (UNIQUE provider_event_id), matched by the payment reference now stored
 * on the payment; one arriving first has no order until its payment claims it.
 */

export async function up(db: AnyDb): Promise<void> {
  const { timestamp, now, createTableWithId } = columnsOf(db);
  await db.schema.alterTable('payments').addColumn('provider_payment_ref', 'text').execute();
  await db.schema
    .createIndex('payments_provider_payment_ref')
    .on('payments')
    .column('provider_payment_ref')
    .execute();
  await createTableWithId('refunds')
    .addColumn('provider_event_id', 'text', (col) => col.notNull().unique())
    .addColumn('payment_ref', 'text', (col) => col.notNull())
    .addColumn('kind', 'text', (col) => col.notNull())
    .addColumn('refund_id', 'text')
    .addColumn('amount', 'integer', (col) => col.notNull())
    .addColumn('currency', 'text')
    .addColumn('status', 'text', (col) => col.notNull())
    .addColumn('order_id', 'integer', (col) => col.references('orders.id'))
    .addColumn('handled_by_chain', 'text')
    .addColumn('created_at', timestamp, (col) => col.notNull().defaultTo(now))
    .execute();
  await db.schema.createIndex('refunds_payment_ref').on('refunds').column('payment_ref').execute();
  await db.schema.createIndex('refunds_order_id').on('refunds').column('order_id').execute();
  await db.schema
    .alterTable('orders')
    .addColumn('refunded_amount', 'integer', (col) => col.notNull().defaultTo(0))
    .execute();
  await db.schema.alterTable('orders').addColumn('return_review_requested_at', timestamp).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('orders').dropColumn('return_review_requested_at').execute();
  await db.schema.alterTable('orders').dropColumn('refunded_amount').execute();
  await db.schema.dropTable('refunds').execute();
  await db.schema.dropIndex('payments_provider_payment_ref').execute();
  await db.schema.alterTable('payments').dropColumn('provider_payment_ref').execute();
}
