import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { PROMETHEUS_BIN_DIR_ENV, provisionPrometheus } from '../../harness/prometheus/provision';
import { provisionTemporalServers } from '../../harness/temporal/provision';
import { findChromium } from './chromium';
import { postgresServerInstalled, startTestPostgres } from '../../harness/postgres/test-server';
import { ensureSystemPackages, testSystemNeeds } from './system-packages';

/**
 * Runs once before all test files: installs the Debian packages the tests need when they are
 * missing (first run, as root), makes sure both Temporal servers exist (building or downloading
 * them on a fresh machine) and Prometheus with promtool, unpacks the browser and starts one
 * throwaway PostgreSQL cluster. What it finds is handed to the test workers through environment
 * variables, so no worker provisions anything itself.
 */
export default async function globalSetup(): Promise<void> {
  const log = (line: string) => process.stderr.write(`${line}\n`);
  // The SDK's warnings and errors, expected ones included, go to a file rather than the screen
  // (quiet-sdk-logs.ts); a failing test shows its own.
  process.env.TEST_LOG_DIR ??= mkdtempSync(path.join(tmpdir(), 'order-payments-test-logs-'));
  log(
    `[logs] SDK warnings and errors of this run: ${path.join(process.env.TEST_LOG_DIR, 'sdk.log')}`,
  );
  await ensureSystemPackages(testSystemNeeds(postgresServerInstalled), (line) =>
    log(`[setup] ${line}`),
  );

  const servers = await provisionTemporalServers({ log });
  // Undefined means the SDK's own download works; leave the variable unset then.
  if (servers.devServerPath) process.env.TEMPORAL_CLI_PATH ??= servers.devServerPath;
  if (servers.testServerPath) process.env.TEMPORAL_TEST_SERVER_PATH ??= servers.testServerPath;
  // promtool for the alert rules' tests, Prometheus for the dashboard's end-to-end test.
  process.env[PROMETHEUS_BIN_DIR_ENV] ??= (await provisionPrometheus({ log })).binDir;

  // A browser that cannot be found fails the Web UI tests (they search again and say why), not
  // the whole run.
  try {
    process.env.CHROMIUM_PATH = await findChromium((line) => log(`[browser] ${line}`));
  } catch (error) {
    log(`[browser] ${error instanceof Error ? error.message : String(error)}`);
  }

  const postgres = await startTestPostgres();
  process.env.TEST_POSTGRES_URL = postgres.url;
  (globalThis as { __testPostgres?: typeof postgres }).__testPostgres = postgres;
}
