import { createDatabase } from '../../src/db/connection';
import { migrateToLatest, type MigrationPoint } from '../../src/db/migrate';

/**
 * Every point of every migration this build has, in the order a fresh database passes them:
 * `<migration>#<n>` for n = 1..(its statements), found by migrating an in-memory SQLite
 * database and noting each. A migration that issued a different number of statements on
 * PostgreSQL would have points there that this list lacks (none does today).
 * `node --import tsx dev/migrations/points.ts` prints them, one a line.
 */
export async function migrationPoints(): Promise<MigrationPoint[]> {
  const points: MigrationPoint[] = [];
  const scratch = createDatabase('sqlite::memory:');
  try {
    await migrateToLatest(scratch.db, { atPoint: (point) => void points.push(point) });
  } finally {
    await scratch.close();
  }
  return points;
}

if (require.main === module) {
  void migrationPoints().then((points) => process.stdout.write(`${points.join('\n')}\n`));
}
