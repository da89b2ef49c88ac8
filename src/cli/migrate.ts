import { loadConfig } from '../config';
import { createDatabase, migrateToLatest } from '../db';
import { runMain } from '../process/run-main';
import { createTool, parseTool } from './command-line';

const commandLine = createTool(
  'npm run migrate --',
  'Brings the database of DATABASE_URL to the latest schema. Safe to run again, beside another ' +
    'run, or after a killed one.',
);

// Why a rerun, a concurrent run or one after a killed run is safe: src/db/migrate.ts.
async function main(): Promise<number | void> {
  const line = await parseTool(commandLine, () => undefined);
  if (line.kind === 'exit') return line.code;
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
