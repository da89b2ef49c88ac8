import { provisionTemporalServers } from '../../src/temporal/provision';
import { startTestPostgres } from './postgres';

/**
 * Runs once before all test files: makes sure both Temporal servers exist (building or
 * downloading them on a fresh machine) and starts one throwaway PostgreSQL cluster. What it
 * finds is handed to the test workers through environment variables, so no worker provisions
 * anything itself.
 */
export default async function globalSetup(): Promise<void> {
  const servers = await provisionTemporalServers({
    log: (line) => process.stderr.write(`${line}\n`),
  });
  // Undefined means the SDK's own download works; leave the variable unset then.
  if (servers.devServerPath) process.env.TEMPORAL_CLI_PATH ??= servers.devServerPath;
  if (servers.testServerPath) process.env.TEMPORAL_TEST_SERVER_PATH ??= servers.testServerPath;

  const postgres = await startTestPostgres();
  process.env.TEST_POSTGRES_URL = postgres.url;
  (globalThis as { __testPostgres?: typeof postgres }).__testPostgres = postgres;
}
