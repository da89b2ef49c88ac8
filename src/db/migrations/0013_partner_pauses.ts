import { sql } from 'kysely';
import { type AnyDb, columnsOf } from './columns';

/**
 * The durable truth read before each partner call: a pause survives every restart and needs no
 * signal to arrive. `release_cursor_ms`: the next free slot (epoch ms) of a `--rate N` resume.
 */

export async function up(db: AnyDb): Promise<void> {
  const { timestamp } = columnsOf(db);
  await db.schema
    .createTable('partner_pauses')
    .addColumn('partner', 'text', (col) => col.primaryKey())
    .addColumn('paused_at', timestamp, (col) => col.notNull())
    .addColumn('paused_by', 'text', (col) => col.notNull())
    .addColumn('reason', 'text')
    .addColumn('resumed_at', timestamp)
    .addColumn('resume_rate', 'integer', (col) =>
      col.check(sql`resume_rate is null or resume_rate > 0`),
    )
    .addColumn('release_cursor_ms', 'bigint')
    // A rate and its cursor exist only on a resume, and always together.
    .addCheckConstraint(
      'partner_pauses_release_shape_check',
      sql`(resume_rate is null and release_cursor_ms is null)
        or (resumed_at is not null and resume_rate is not null and release_cursor_ms is not null)`,
    )
    .execute();
}

export async function down(db: AnyDb): Promise<void> {
  await db.schema.dropTable('partner_pauses').execute();
}
