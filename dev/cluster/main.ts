import fs from 'node:fs/promises';
import path from 'node:path';
import { createTool, parseTool } from '../../src/cli/command-line';
import { startCluster, type TemporalCluster } from './cluster';
import { fixedPorts, NUM_HISTORY_SHARDS, SERVICES } from './config';
import { provisionClusterBinaries, SERVER_BIN_ENV, SQL_TOOL_BIN_ENV } from './provision-server';

/**
 * `npm run cluster`: a multi-service Temporal server 1.29.1 on PostgreSQL with mTLS, on this
 * machine, until Ctrl-C. Prints the variables that point the app (and the Temporal CLI) at it.
 * See docs/temporal-cluster.md.
 */

const commandLine = createTool(
  'npm run cluster --',
  'Starts PostgreSQL and the Temporal frontend, history, matching and worker services (separate ' +
    "processes, mTLS on the frontend), registers the namespace and the app's search attributes, " +
    'and prints how to point the app at it. Ctrl-C stops everything.',
)
  .option(
    '--data-dir <dir>',
    'where PostgreSQL data, certificates, config and logs live (kept between runs)',
    path.join('data', 'temporal-cluster'),
  )
  .option('--fresh', 'delete that directory first: new databases and certificates')
  .option('--plain-internode', 'no TLS between the services (the frontend keeps mTLS)')
  .option(
    '--provision-only',
    'build (or find) temporal-server and temporal-sql-tool, print where, exit',
  );

async function main(): Promise<number> {
  const line = await parseTool(commandLine, (_args, options) => ({
    dataDir: options.dataDir as string,
    fresh: options.fresh === true,
    plainInternode: options.plainInternode === true,
    provisionOnly: options.provisionOnly === true,
  }));
  if (line.kind === 'exit') return line.code;
  const values = line.work;
  if (values.provisionOnly) {
    const binaries = await provisionClusterBinaries();
    process.stdout.write(
      `${SERVER_BIN_ENV}=${binaries.server}\n${SQL_TOOL_BIN_ENV}=${binaries.sqlTool}\n`,
    );
    return 0;
  }
  const root = path.resolve(values.dataDir);
  if (values.fresh) await fs.rm(root, { recursive: true, force: true });

  const ports = fixedPorts();
  let stopRequested = false;
  let requestStop: (reason: string) => void = () => undefined;
  const stopped = new Promise<string>((resolve) => {
    requestStop = (reason) => {
      stopRequested = true;
      resolve(reason);
    };
  });
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (stopRequested) {
        process.stderr.write('[cluster] stopping already; the watchdog finishes if we exit\n');
        process.exit(130);
      }
      requestStop(signal);
    });
  }

  // Ctrl-C during start-up aborts it; startCluster then stops what it had started.
  const abort = new AbortController();
  void stopped.then(() => abort.abort());
  let cluster: TemporalCluster;
  try {
    cluster = await startCluster({
      root,
      ports,
      internodeTls: !values.plainInternode,
      signal: abort.signal,
    });
  } catch (error) {
    if (abort.signal.aborted) return 130;
    throw error;
  }

  const env = cluster.clientEnv();
  const exports = Object.entries(env)
    .map(([name, value]) => `export ${name}=${value}`)
    .join('\n');
  process.stdout.write(
    `
Temporal cluster (server 1.29.1) is up: ${SERVICES.join(', ')} as separate processes,
PostgreSQL persistence and visibility, ${NUM_HISTORY_SHARDS} history shards, mTLS on the frontend.

  frontend (gRPC, mTLS)   ${cluster.address}
  frontend (HTTP API)     https://127.0.0.1:${ports.frontendHttp}
  PostgreSQL              ${cluster.postgresUrl}
  metrics                 ${SERVICES.map((s) => `${s} :${ports.services[s].metrics}`).join(', ')}
  logs                    ${cluster.logDir}

Point the app (npm start, npm run worker/http/ops/doctor) at it:

${exports}

The same variables drive the Temporal CLI, e.g. \`temporal workflow list\`.
Ctrl-C stops the cluster; its data stays in ${root} (--fresh starts over).
`,
  );

  // A service that dies is a broken cluster: say which and stop the rest instead of lingering.
  const watch = setInterval(() => {
    const crash = cluster?.unexpectedExits()[0];
    if (crash && !stopRequested) {
      process.stderr.write(
        `[cluster] ${crash.service} exited (code ${crash.code}, signal ${crash.signal}); stopping. See ${cluster?.logDir}\n`,
      );
      requestStop(`${crash.service} exited`);
    }
  }, 1_000);
  const signal = await stopped;
  clearInterval(watch);
  process.stderr.write(`[cluster] ${signal}: stopping the services and PostgreSQL…\n`);
  await cluster.stop();
  process.stderr.write('[cluster] stopped\n');
  return cluster.unexpectedExits().length > 0 ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`[cluster] ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
