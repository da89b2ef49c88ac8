import { createDatabase, type DatabaseHandle } from '../../src/db/connection';
import { migrateToLatest, type MigrationPoint } from '../../src/db/migrate';

/**
 * Every point of every migration this build has, in the order a fresh database passes them:
 * `<migration>#<n>` for n = 1..(its statements), found by migrating an in-memory SQLite
 * database (or `empty`, a database with no schema yet, which this migrates) and noting each.
 * The dialects differ: 0011 rebuilds the orders table on SQLite (6 statements) and replaces a
 * constraint on PostgreSQL (2), so a list for PostgreSQL is found on PostgreSQL.
 * `node --import tsx harness/migrations/points.ts` prints SQLite's, one a line.
 */
export async function migrationPoints(empty?: DatabaseHandle): Promise<MigrationPoint[]> {
  const points: MigrationPoint[] = [];
  const scratch = empty ?? createDatabase('sqlite::memory:');
  try {
    await migrateToLatest(scratch.db, { atPoint: (point) => void points.push(point) });
  } finally {
    if (!empty) await scratch.close();
  }
  return points;
}

if (require.main === module) {
  void migrationPoints().then((points) => process.stdout.write(`${points.join('\n')}\n`));
}
