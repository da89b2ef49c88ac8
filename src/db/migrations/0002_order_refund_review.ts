import { type AnyDb, columnsOf } from './columns';

/**
 * A second, different payment for an order that is already paid (a double charge) is kept, and
 * the order is flagged for a person to review and refund it. The flag is a timestamp: when it
 * was raised, null when nothing needs review.
 */

export async function up(db: AnyDb): Promise<void> {
  const { timestamp } = columnsOf(db);
  await db.schema.alterTable('orders').addColumn('refund_review_requested_at', timestamp).execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.alterTable('orders').dropColumn('refund_review_requested_at').execute();
}
