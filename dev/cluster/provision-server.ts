import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  ensureCached,
  runOrExplain,
  tail,
  type ProvisionContext,
} from '../../harness/provision/cache';
import { defaultContext } from '../../harness/temporal/provision';

/**
 * The multi-service Temporal server and its SQL schema tool, built from the Go module proxy the
 * way harness/temporal/provision.ts builds the CLI: once, in the shared cache
 * (`~/.cache/order-payments-temporal/temporal-server-1.29.1-<hash>/bin/`), with progress lines,
 * under a lock, renamed into place only when whole. TEMPORAL_SERVER_BIN and
 * TEMPORAL_SQL_TOOL_BIN name existing binaries instead (then nothing is built).
 */

/** The server the Temporal CLI 1.5.1 embeds: the dev server and the cluster run the same engine. */
export const TEMPORAL_SERVER_VERSION = '1.29.1';
export const SERVER_BIN_ENV = 'TEMPORAL_SERVER_BIN';
export const SQL_TOOL_BIN_ENV = 'TEMPORAL_SQL_TOOL_BIN';

export interface ServerBinaries {
  server: string;
  sqlTool: string;
}

const MODULE = 'go.temporal.io/server';
// One `go install` for both packages of the module: they share most of their dependency graph,
// so the second costs seconds once the first is compiled. -s -w drop the symbol tables.
const GO_INSTALL_ARGS = [
  'install',
  '-trimpath',
  '-ldflags',
  '-s -w',
  `${MODULE}/cmd/server@v${TEMPORAL_SERVER_VERSION}`,
  `${MODULE}/cmd/tools/sql@v${TEMPORAL_SERVER_VERSION}`,
];
// go install names a binary after its package folder; these are the names Temporal's own
// release archives and Docker images use.
const RENAMES: Record<string, keyof ServerBinaries> = { server: 'server', sql: 'sqlTool' };
const FILE_NAMES: Record<keyof ServerBinaries, string> = {
  server: 'temporal-server',
  sqlTool: 'temporal-sql-tool',
};

/** Both binaries: named by the environment, or built (once) into the cache. */
export async function provisionClusterBinaries(
  overrides: Partial<ProvisionContext> = {},
): Promise<ServerBinaries> {
  const context = defaultContext(overrides);
  const fromEnv = {
    server: await executableFromEnv(SERVER_BIN_ENV, context.env),
    sqlTool: await executableFromEnv(SQL_TOOL_BIN_ENV, context.env),
  };
  if (fromEnv.server && fromEnv.sqlTool) {
    return { server: fromEnv.server, sqlTool: fromEnv.sqlTool };
  }
  const bin = path.join(await ensureServerBuild(context), 'bin');
  return {
    server: fromEnv.server ?? path.join(bin, FILE_NAMES.server),
    sqlTool: fromEnv.sqlTool ?? path.join(bin, FILE_NAMES.sqlTool),
  };
}

async function ensureServerBuild(context: ProvisionContext): Promise<string> {
  return ensureCached(context, {
    name: `temporal-server-${TEMPORAL_SERVER_VERSION}`,
    recipe: [GO_INSTALL_ARGS.join(' ')],
    label: `the Temporal server ${TEMPORAL_SERVER_VERSION} and its SQL schema tool with go install`,
    expected: 'about 3 minutes on 2 cores once the CLI build has filled the Go caches',
    build: async (outDir, onLine) => {
      const bin = path.join(outDir, 'bin');
      // CGO off: the PostgreSQL driver (pgx) and the SQLite one are pure Go, so no C compiler
      // is needed and the binaries are static.
      const env = { ...context.env, GOBIN: bin, CGO_ENABLED: '0' };
      const built = await runOrExplain(
        context,
        'go',
        GO_INSTALL_ARGS,
        { cwd: outDir, env, onLine },
        'Go 1.24+',
      );
      if (built.code !== 0) {
        throw new Error(`go install failed with exit code ${built.code}:\n${tail(built.output)}`);
      }
      for (const [goName, kind] of Object.entries(RENAMES)) {
        const target = path.join(bin, FILE_NAMES[kind]);
        await fs.rename(path.join(bin, goName), target);
        // Both print "<name> version 1.29.1": a wrong module version would show here.
        const version = await context.run(target, ['--version'], { cwd: outDir, env: context.env });
        if (version.code !== 0 || !version.output.includes(`version ${TEMPORAL_SERVER_VERSION}`)) {
          throw new Error(`${FILE_NAMES[kind]} does not run as expected:\n${tail(version.output)}`);
        }
      }
    },
  });
}

async function executableFromEnv(
  name: string,
  env: NodeJS.ProcessEnv,
): Promise<string | undefined> {
  const value = env[name];
  if (!value) return undefined;
  try {
    await fs.access(value, fsConstants.X_OK);
  } catch {
    throw new Error(
      `${name} is set to ${value}, which is not an executable file; fix or unset it.`,
    );
  }
  return path.resolve(value);
}
