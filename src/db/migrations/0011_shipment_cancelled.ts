import { sql } from 'kysely';
import { type AnyDb, columnsOf } from './columns';

/**
 * SQLite cannot alter a CHECK: the table is rebuilt its documented way (create, copy, drop,
 * rename) from its own DDL, and the AUTOINCREMENT counter carried over (IDs never reused, 0001).
 */

const OLD_CHECK = `shipment_status in ('requested', 'failed')`;
const NEW_CHECK = `shipment_status in ('requested', 'failed', 'cancelled')`;

export async function up(db: AnyDb): Promise<void> {
  if (columnsOf(db).postgres) {
    await replacePostgresCheck(db, NEW_CHECK);
    return;
  }
  await rebuildSqliteOrders(db, OLD_CHECK, NEW_CHECK);
}

export async function down(db: AnyDb): Promise<void> {
  // Nothing may stay cancelled under the old rule: such an order is one that will not ship.
  await db
    .updateTable('orders')
    .set({ shipment_status: null })
    .where('shipment_status', '=', 'cancelled')
    .execute();
  if (columnsOf(db).postgres) {
    await replacePostgresCheck(db, OLD_CHECK);
    return;
  }
  await rebuildSqliteOrders(db, NEW_CHECK, OLD_CHECK);
}

async function replacePostgresCheck(db: AnyDb, check: string): Promise<void> {
  // PostgreSQL's own name for 0001's column constraint.
  await db.schema.alterTable('orders').dropConstraint('orders_shipment_status_check').execute();
  await db.schema
    .alterTable('orders')
    .addCheckConstraint(
      'orders_shipment_status_check',
      sql.raw(`shipment_status is null or ${check}`),
    )
    .execute();
}

async function rebuildSqliteOrders(db: AnyDb, from: string, to: string): Promise<void> {
  const { rows } = await sql<{
    sql: string;
  }>`select sql from sqlite_master where type = 'table' and name = 'orders'`.execute(db);
  const ddl = rows[0]?.sql;
  if (!ddl || !ddl.includes(from)) {
    throw new Error(`orders has no CHECK "${from}" to replace: its schema is not the expected one`);
  }
  const { rows: seq } = await sql<{
    seq: number;
  }>`select seq from sqlite_sequence where name = 'orders'`.execute(db);

  const created = ddl.replace(/^CREATE TABLE "orders"/, 'CREATE TABLE "orders_rebuilt"');
  if (created === ddl) throw new Error(`orders' DDL does not start as expected: ${ddl}`);
  await sql.raw(created.replace(from, to)).execute(db);
  await sql`insert into orders_rebuilt select * from orders`.execute(db);
  await sql`drop table orders`.execute(db);
  await sql`alter table orders_rebuilt rename to orders`.execute(db);
  // The copy set the new table's counter to its highest ID; the old one may have been higher.
  // Always run (a no-op without rows), so the migration's statements are the same on any data.
  const counter = seq[0]?.seq ?? 0;
  await sql`update sqlite_sequence set seq = max(seq, ${counter}) where name = 'orders'`.execute(
    db,
  );
}
