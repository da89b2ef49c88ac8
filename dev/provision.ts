import { createTool, parseTool } from '../src/cli/command-line';
import { PROMETHEUS_BIN_DIR_ENV, provisionPrometheus } from '../harness/prometheus/provision';
import { temporalCacheDir } from '../harness/provision/cache';
import {
  CLI_PATH_ENV,
  TEST_SERVER_PATH_ENV,
  provisionTemporalServers,
} from '../harness/temporal/provision';

/**
 * `npm run provision`: makes sure both Temporal servers are available on this machine (building
 * them the first time when the SDK cannot download them), and Prometheus with promtool for the
 * monitoring tests, and prints where they are. Progress goes to stderr; the result goes to
 * stdout as `NAME=path` lines, ready for `export`.
 */
const commandLine = createTool(
  'npm run provision --',
  'Makes sure both Temporal servers (the CLI dev server and the time-skipping test server) and ' +
    'Prometheus with promtool are on this machine, building them the first time when the SDK ' +
    'cannot download them. Progress goes to stderr; the result to stdout as NAME=path lines.',
);

async function main(): Promise<void> {
  const line = await parseTool(commandLine, () => undefined);
  if (line.kind === 'exit') {
    process.exitCode = line.code;
    return;
  }
  const started = Date.now();
  const servers = await provisionTemporalServers();
  const prometheus = await provisionPrometheus();
  const seconds = ((Date.now() - started) / 1000).toFixed(1);
  const where = (path: string | undefined) =>
    path ?? `the SDK's own download, kept in ${temporalCacheDir()}/sdk-download`;
  process.stderr.write(
    [
      `Temporal servers and Prometheus ready in ${seconds}s (cache: ${temporalCacheDir()})`,
      `  dev server (Temporal CLI):      ${where(servers.devServerPath)}`,
      `  time-skipping test server:      ${where(servers.testServerPath)}`,
      `  prometheus, promtool:           ${prometheus.binDir} (${prometheus.version})`,
      '',
    ].join('\n'),
  );
  if (servers.devServerPath) process.stdout.write(`${CLI_PATH_ENV}=${servers.devServerPath}\n`);
  if (servers.testServerPath)
    process.stdout.write(`${TEST_SERVER_PATH_ENV}=${servers.testServerPath}\n`);
  process.stdout.write(`${PROMETHEUS_BIN_DIR_ENV}=${prometheus.binDir}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(
    `Provisioning failed: ${error instanceof Error ? error.message : String(error)}\n`,
  );
  process.exit(1);
});
