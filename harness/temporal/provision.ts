import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { type EphemeralServerExecutable, TestWorkflowEnvironment } from '@temporalio/testing';
import testingPackage from '@temporalio/testing/package.json';
import {
  describe,
  ensureCached,
  runCommand,
  runOrExplain,
  tail,
  temporalCacheDir,
  type ProvisionContext,
  type ServerKind,
} from '../provision/cache';

/**
 * Provides the two Temporal servers the project runs on a developer machine or in CI: the
 * Temporal CLI dev server (`npm start`, dev-server tests) and the time-skipping test server
 * (workflow tests).
 *
 * Routes, first that works wins:
 *   1. an executable named by TEMPORAL_CLI_PATH / TEMPORAL_TEST_SERVER_PATH;
 *   2. the SDK's own download (needs internet access to its download host);
 *   3. built from package registries, which offline machines can still reach: the CLI with
 *      `go install` from the Go module proxy, the test server as a JVM program from Maven Central.
 *      When Go is missing or its build fails, the Java test server also stands in for the dev
 *      server, without Web UI or persistence.
 * Whatever is downloaded or built lives in a per-user cache outside the repo, so every clone on
 * the machine reuses it. See docs/temporal-servers.md.
 */

/** Newest tag `go install` accepts: later tags carry a `replace` directive in go.mod. */
export const TEMPORAL_CLI_VERSION = '1.5.1';
/** Newest release seen on Maven Central; passed to tools/temporal-test-server/pom.xml. */
export const TEST_SERVER_VERSION = '1.35.0';

export const CLI_PATH_ENV = 'TEMPORAL_CLI_PATH';
export const TEST_SERVER_PATH_ENV = 'TEMPORAL_TEST_SERVER_PATH';

/**
 * Where each server is. A path when the project's own provisioning (or an environment variable)
 * supplied it; undefined when the SDK's download works, so the SDK should fetch it itself.
 */
export interface ProvisionedServers {
  devServerPath?: string;
  testServerPath?: string;
}

const LABEL: Record<ServerKind, string> = {
  'dev-server': 'Temporal CLI dev server',
  'test-server': 'Temporal time-skipping test server',
};
const PATH_ENV: Record<ServerKind, string> = {
  'dev-server': CLI_PATH_ENV,
  'test-server': TEST_SERVER_PATH_ENV,
};

const TOOLS_DIR = path.resolve(__dirname, '..', '..', 'tools', 'temporal-test-server');
const TEST_SERVER_FILES = ['pom.xml', 'temporal-test-server.sh', 'temporal-dev-server.sh'];

const CLI_MODULE = 'github.com/temporalio/cli';
const GO_INSTALL_ARGS = [
  'install',
  // -s -w drop the symbol tables (250 MB -> 213 MB; the embedded Web UI is much of the rest).
  // -X makes `temporal --version` report the tag instead of 0.0.0-DEV; the build is checked by it.
  '-trimpath',
  '-ldflags',
  `-s -w -X ${CLI_MODULE}/temporalcli.Version=${TEMPORAL_CLI_VERSION}`,
  `${CLI_MODULE}/cmd/temporal@v${TEMPORAL_CLI_VERSION}`,
];

// The SDK re-downloads after its TTL; a long one keeps a laptop that went offline working. The
// one-day margin keeps a file we judged present from expiring before the server starts.
const SDK_DOWNLOAD_TTL_DAYS = 30;
const DAY_MS = 24 * 60 * 60 * 1000;
const SDK_DOWNLOAD_HOST = 'https://temporal.download/';
// Fail-fast probe: a firewall that drops packets would otherwise hold the SDK's download for
// minutes before we could fall back.
const SDK_HOST_PROBE_TIMEOUT_MS = 5_000;

export function defaultContext(overrides: Partial<ProvisionContext> = {}): ProvisionContext {
  const env = overrides.env ?? process.env;
  const cacheDir = overrides.cacheDir ?? temporalCacheDir(env);
  const log = overrides.log ?? ((line: string) => process.stderr.write(`[temporal] ${line}\n`));
  const context: ProvisionContext = {
    cacheDir,
    env,
    log,
    run: runCommand,
    sdkDownloadWorks: (kind) => trySdkDownload(kind, context),
    progressIntervalMs: 15_000,
    ...overrides,
  };
  return context;
}

/** Makes sure both servers are available, building what the SDK cannot download. */
export async function provisionTemporalServers(
  opts: { log?: (line: string) => void } = {},
): Promise<ProvisionedServers> {
  const context = defaultContext(opts.log ? { log: opts.log } : {});
  // The test server first: it is quick, and the dev server may fall back on it.
  const testServerPath = await provisionServer('test-server', context);
  const devServerPath = await provisionServer('dev-server', context);
  return { devServerPath, testServerPath };
}

/** The dev server executable to hand the SDK: environment variable, SDK download or own build. */
export async function devServerExecutable(
  opts: { log?: (line: string) => void } = {},
): Promise<EphemeralServerExecutable> {
  return executableFor('dev-server', defaultContext(opts.log ? { log: opts.log } : {}));
}

/** The time-skipping test server executable to hand the SDK, found the same way. */
export async function testServerExecutable(
  opts: { log?: (line: string) => void } = {},
): Promise<EphemeralServerExecutable> {
  return executableFor('test-server', defaultContext(opts.log ? { log: opts.log } : {}));
}

// One provisioning per server kind and process, however many tests ask.
const provisioning = new Map<ServerKind, Promise<string | undefined>>();

async function executableFor(
  kind: ServerKind,
  context: ProvisionContext,
): Promise<EphemeralServerExecutable> {
  const fromEnv = await pathFromEnv(kind, context.env);
  if (fromEnv) return { type: 'existing-path', path: fromEnv };

  let pending = provisioning.get(kind);
  if (!pending) {
    pending = provisionServer(kind, context);
    provisioning.set(kind, pending);
    pending.catch(() => provisioning.delete(kind));
  }
  const provisioned = await pending;
  if (provisioned) return { type: 'existing-path', path: provisioned };
  // Pointing at the file the SDK already downloaded spares it a network round trip and keeps
  // working offline; the SDK route stays as the default if its file naming ever changes.
  const downloaded = await sdkDownloadedFile(kind, context);
  return downloaded ? { type: 'existing-path', path: downloaded } : sdkDownloadExecutable(context);
}

/** One server: its path, or undefined when the SDK's own download works for it. */
export async function provisionServer(
  kind: ServerKind,
  context: ProvisionContext,
): Promise<string | undefined> {
  const fromEnv = await pathFromEnv(kind, context.env);
  if (fromEnv) return fromEnv;
  if (await context.sdkDownloadWorks(kind)) return undefined;
  if (kind === 'test-server') {
    return path.join(await ensureTestServer(context), 'temporal-test-server.sh');
  }

  try {
    return path.join(await ensureTemporalCli(context), 'bin', 'temporal');
  } catch (error) {
    context.log(
      `Could not build the Temporal CLI: ${describe(error)}\n` +
        'Falling back to the Java test server as dev server: it has no Web UI and keeps nothing on disk.',
    );
    return path.join(await ensureTestServer(context), 'temporal-dev-server.sh');
  }
}

async function pathFromEnv(kind: ServerKind, env: NodeJS.ProcessEnv): Promise<string | undefined> {
  const name = PATH_ENV[kind];
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

// ---------------------------------------------------------------------------------------------
// Route 2: the SDK's own download

function sdkDownloadExecutable(context: ProvisionContext): EphemeralServerExecutable {
  return {
    type: 'cached-download',
    downloadDir: path.join(context.cacheDir, 'sdk-download'),
    ttl: `${SDK_DOWNLOAD_TTL_DAYS}d`,
  };
}

/** The file the SDK downloads to, named as the SDK names it (`<prefix>-sdk-typescript-<version>`). */
async function sdkDownloadedFile(
  kind: ServerKind,
  context: ProvisionContext,
): Promise<string | undefined> {
  const prefix = kind === 'dev-server' ? 'temporal' : 'temporal-test-server';
  const file = path.join(
    context.cacheDir,
    'sdk-download',
    `${prefix}-sdk-typescript-${testingPackage.version}`,
  );
  try {
    const stat = await fs.stat(file);
    return Date.now() - stat.mtimeMs < (SDK_DOWNLOAD_TTL_DAYS - 1) * DAY_MS ? file : undefined;
  } catch {
    return undefined;
  }
}

async function trySdkDownload(kind: ServerKind, context: ProvisionContext): Promise<boolean> {
  if (await sdkDownloadedFile(kind, context)) return true;
  // Node's fetch ignores proxy variables while the SDK honours them: behind a proxy, let the SDK try.
  const proxied = ['HTTPS_PROXY', 'https_proxy', 'ALL_PROXY', 'all_proxy'].some(
    (name) => context.env[name],
  );
  if (!proxied && !(await reachable(SDK_DOWNLOAD_HOST))) {
    context.log(`The SDK's download host is unreachable; using the project's own ${LABEL[kind]}.`);
    return false;
  }
  context.log(`Downloading the ${LABEL[kind]} through the SDK…`);
  const server = { executable: sdkDownloadExecutable(context) };
  try {
    // The SDK only downloads while starting a server: start one, then stop it.
    const env =
      kind === 'dev-server'
        ? await TestWorkflowEnvironment.createLocal({ server })
        : await TestWorkflowEnvironment.createTimeSkipping({ server });
    await env.teardown();
    return true;
  } catch (error) {
    context.log(
      `The SDK's download failed (${describe(error)}); using the project's own ${LABEL[kind]}.`,
    );
    return false;
  }
}

async function reachable(url: string): Promise<boolean> {
  try {
    await fetch(url, { method: 'HEAD', signal: AbortSignal.timeout(SDK_HOST_PROBE_TIMEOUT_MS) });
    return true;
  } catch {
    return false;
  }
}

// ---------------------------------------------------------------------------------------------
// Route 3: built from package registries

/** Builds the Temporal CLI (with Web UI) from the Go module proxy; returns its cache folder. */
async function ensureTemporalCli(context: ProvisionContext): Promise<string> {
  return ensureCached(context, {
    name: `temporal-cli-${TEMPORAL_CLI_VERSION}`,
    recipe: [GO_INSTALL_ARGS.join(' ')],
    label: `the Temporal CLI ${TEMPORAL_CLI_VERSION} with go install`,
    expected: 'about 3.5 minutes on 2 cores with cold Go caches',
    build: async (outDir, onLine) => {
      const bin = path.join(outDir, 'bin');
      // CGO off: the CLI's SQLite is pure Go, so no C compiler is needed and the binary is static.
      const env = { ...context.env, GOBIN: bin, CGO_ENABLED: '0' };
      const built = await runOrExplain(
        context,
        'go',
        GO_INSTALL_ARGS,
        { cwd: outDir, env, onLine },
        'Go 1.25+',
      );
      if (built.code !== 0) {
        throw new Error(`go install failed with exit code ${built.code}:\n${tail(built.output)}`);
      }
      const version = await context.run(path.join(bin, 'temporal'), ['--version'], {
        cwd: outDir,
        env: context.env,
      });
      if (
        version.code !== 0 ||
        !version.output.includes(`temporal version ${TEMPORAL_CLI_VERSION}`)
      ) {
        throw new Error(`the built CLI does not run as expected:\n${tail(version.output)}`);
      }
    },
  });
}

/** Resolves the Java test server's jars from Maven Central beside its scripts; returns the folder. */
async function ensureTestServer(context: ProvisionContext): Promise<string> {
  const sources = await Promise.all(
    TEST_SERVER_FILES.map((file) => fs.readFile(path.join(TOOLS_DIR, file), 'utf8')),
  );
  return ensureCached(context, {
    name: `temporal-test-server-${TEST_SERVER_VERSION}`,
    recipe: sources,
    label: `the Temporal test server ${TEST_SERVER_VERSION} from Maven Central`,
    expected: 'about 10 seconds',
    build: async (outDir, onLine) => {
      const options = { cwd: outDir, env: context.env, onLine };
      const java = await runOrExplain(context, 'java', ['-version'], options, 'Java 17+');
      if (java.code !== 0) throw new Error(`java -version failed:\n${tail(java.output)}`);
      const lib = path.join(outDir, 'lib');
      const resolved = await runOrExplain(
        context,
        'mvn',
        [
          '-B',
          '-q',
          '-Dstyle.color=never',
          '-f',
          path.join(TOOLS_DIR, 'pom.xml'),
          `-Dtemporal.test-server.version=${TEST_SERVER_VERSION}`,
          'dependency:copy-dependencies',
          '-DincludeScope=runtime',
          `-DoutputDirectory=${lib}`,
        ],
        options,
        'Maven 3.6.3+',
      );
      if (resolved.code !== 0) {
        throw new Error(`mvn failed with exit code ${resolved.code}:\n${tail(resolved.output)}`);
      }
      const mainJar = `temporal-test-server-${TEST_SERVER_VERSION}.jar`;
      if (!(await fs.readdir(lib)).includes(mainJar)) {
        throw new Error(`mvn finished but ${mainJar} is missing`);
      }
      for (const file of TEST_SERVER_FILES.filter((f) => f.endsWith('.sh'))) {
        await fs.copyFile(path.join(TOOLS_DIR, file), path.join(outDir, file));
        await fs.chmod(path.join(outDir, file), 0o755);
      }
    },
  });
}
