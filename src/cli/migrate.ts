import { loadConfig } from '../config';
import { createDatabase, migrateToLatest } from '../db';
import { runMain } from '../process/run-main';

// Safe to run again, beside another, or after a killed one (src/db/migrate.ts).
async function main(): Promise<void> {
  // Only DATABASE_URL is passed on: a migration job must not need the app's other settings
  // (e.g. the production-only Temporal and warehouse addresses) to run.
  const config = loadConfig({ DATABASE_URL: process.env.DATABASE_URL });
  const database = createDatabase(config.DATABASE_URL);
  try {
    const applied = await migrateToLatest(database.db);
    process.stdout.write(
      applied.length > 0
        ? `Applied ${applied.length} migration(s) on ${database.dialect}: ${applied.join(', ')}\n`
        : `Database (${database.dialect}) is up to date; nothing to apply.\n`,
    );
  } finally {
    await database.close();
  }
}

runMain(main);
