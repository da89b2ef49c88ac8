import { PostgresAdapter, sql, type Kysely } from 'kysely';

/**
 * Partner pauses: one row per partner an operator has paused (`ops partner pause warehouse`),
 * kept after the resume as the record of the last pause. It is the durable truth the order
 * workflows read before each call to the partner, so a pause survives a restart of every process
 * and does not depend on a signal having reached anyone. `release_cursor_ms` is the next free
 * slot (epoch ms) of a resume with `--rate N`: each held call takes one, 1/N s after the last.
 */

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type AnyDb = Kysely<any>;

export async function up(db: AnyDb): Promise<void> {
  const postgres = db.getExecutor().adapter instanceof PostgresAdapter;
  const timestamp = postgres ? 'timestamptz' : 'text';
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
