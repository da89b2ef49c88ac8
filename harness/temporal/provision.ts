import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { type EphemeralServerExecutable, TestWorkflowEnvironment } from '@temporalio/testing';
import lockfile from 'proper-lockfile';
import testingPackage from '@temporalio/testing/package.json';

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

export type ServerKind = 'dev-server' | 'test-server';

export interface CommandResult {
  /** Exit code, or -1 when the process died from a signal. */
  code: number;
  /** The tail of stdout and stderr interleaved, for error messages. */
  output: string;
}

/** Runs a program to completion; rejects only when it cannot be started (e.g. not installed). */
export type CommandRunner = (
  command: string,
  args: readonly string[],
  options: { cwd: string; env: NodeJS.ProcessEnv; onLine?: (line: string) => void },
) => Promise<CommandResult>;

/** Everything provisioning touches outside itself, so tests can point it elsewhere and watch it. */
export interface ProvisionContext {
  cacheDir: string;
  env: NodeJS.ProcessEnv;
  log: (line: string) => void;
  run: CommandRunner;
  /** Whether the SDK's own download route works for this server on this machine. */
  sdkDownloadWorks: (kind: ServerKind) => Promise<boolean>;
  progressIntervalMs: number;
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

// A lock holder refreshes its lock's mtime (every half of this); one not refreshed for this long
// belongs to a dead process, even on another host sharing the cache.
const LOCK_STALE_MS = 20_000;
const LOCK_POLL_MS = 500;
const OUTPUT_TAIL_CHARS = 16_000;

/** The user cache folder: `${XDG_CACHE_HOME:-~/.cache}/order-payments-temporal`. */
export function temporalCacheDir(env: NodeJS.ProcessEnv = process.env): string {
  const base = env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'order-payments-temporal');
}

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

/** Runs a program; when it cannot even be started, says what to install (`needs`). */
export async function runOrExplain(
  context: ProvisionContext,
  command: string,
  args: readonly string[],
  options: Parameters<CommandRunner>[2],
  needs: string,
): Promise<CommandResult> {
  try {
    return await context.run(command, args, options);
  } catch (error) {
    throw new Error(
      `cannot run ${command} (${describe(error)}); install ${needs} and put it on PATH`,
    );
  }
}

export interface CachedArtifact {
  /** Versioned folder name; a hash of the recipe is appended so a changed recipe rebuilds. */
  name: string;
  recipe: readonly string[];
  label: string;
  /** How long a first build takes, so the wait is no surprise. */
  expected: string;
  build: (outDir: string, onLine: (line: string) => void) => Promise<void>;
}

/**
 * Returns the artifact's cache folder, building it first if needed. A build happens in a private
 * temporary folder renamed into place only once complete, so the folder's existence means it is
 * whole; a lock file keeps a second process from building the same thing at the same time.
 * Exported for the multi-service cluster's own binaries (dev/cluster), built the same way.
 */
export async function ensureCached(
  context: ProvisionContext,
  artifact: CachedArtifact,
): Promise<string> {
  const hash = createHash('sha256').update(artifact.recipe.join('\0')).digest('hex').slice(0, 10);
  const dir = path.join(context.cacheDir, `${artifact.name}-${hash}`);
  if (await isDirectory(dir)) return dir;

  await fs.mkdir(context.cacheDir, { recursive: true });
  const release = await acquireLock(context, dir, artifact.label);
  try {
    if (await isDirectory(dir)) return dir;
    await removeAbandonedBuilds(dir);
    const temp = `${dir}.tmp-${os.hostname()}-${process.pid}-${randomBytes(4).toString('hex')}`;
    await fs.mkdir(temp);
    try {
      await withProgress(context, artifact, (onLine) => artifact.build(temp, onLine));
      await fs.rename(temp, dir);
    } catch (error) {
      await fs.rm(temp, { recursive: true, force: true });
      // Without the lock (a stale one was taken over) another process may have won the race.
      if (await isDirectory(dir)) return dir;
      throw error;
    }
    context.log(`Cached in ${dir}`);
    return dir;
  } finally {
    await release();
  }
}

/** Deletes temporary folders of killed builds on this host; runs only under the artifact's lock. */
async function removeAbandonedBuilds(dir: string): Promise<void> {
  const prefix = `${path.basename(dir)}.tmp-${os.hostname()}-`;
  for (const entry of await fs.readdir(path.dirname(dir))) {
    if (!entry.startsWith(prefix)) continue;
    const pid = Number(entry.slice(prefix.length).split('-')[0]);
    if (!isAlive(pid))
      await fs.rm(path.join(path.dirname(dir), entry), { recursive: true, force: true });
  }
}

/**
 * Takes the artifact's lock (proper-lockfile: a `<dir>.lock` folder whose mtime the holder
 * refreshes; one left unrefreshed for LOCK_STALE_MS, a killed build's, is taken over), waiting
 * with a progress line while another process builds the same artifact.
 */
async function acquireLock(
  context: ProvisionContext,
  dir: string,
  label: string,
): Promise<() => Promise<void>> {
  const waitingSince = Date.now();
  let lastNotice = waitingSince;
  for (;;) {
    try {
      return await lockfile.lock(dir, {
        realpath: false,
        stale: LOCK_STALE_MS,
        // The default throws from a timer, killing the build: a lost lock only risks a second
        // build of the same artifact, which the rename into place settles.
        onCompromised: (error) => context.log(`Lost the lock on ${label}: ${error.message}`),
      });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') throw error;
    }
    const now = Date.now();
    if (now - lastNotice >= context.progressIntervalMs) {
      lastNotice = now;
      context.log(
        `Waiting for another process building ${label}… ${Math.round((now - waitingSince) / 1000)}s`,
      );
    }
    await delay(LOCK_POLL_MS);
  }
}

function isAlive(pid: number): boolean {
  if (!Number.isInteger(pid) || pid <= 0) return false;
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: alive but someone else's.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Runs a long build, logging a line every progressIntervalMs so nobody takes it for a hang. */
async function withProgress(
  context: ProvisionContext,
  { label, expected }: Pick<CachedArtifact, 'label' | 'expected'>,
  work: (onLine: (line: string) => void) => Promise<void>,
): Promise<void> {
  const started = Date.now();
  const seconds = () => Math.round((Date.now() - started) / 1000);
  let lastLine = '';
  context.log(`Building ${label} (${expected}); it is cached for later runs…`);
  const ticker = setInterval(() => {
    // Only news: a line shown once would otherwise look stuck through a long silent compile.
    context.log(`still building… ${seconds()}s${lastLine ? ` (${lastLine})` : ''}`);
    lastLine = '';
  }, context.progressIntervalMs);
  try {
    await work((line) => {
      lastLine = line.length > 100 ? `${line.slice(0, 97)}...` : line;
    });
    context.log(`Built ${label} in ${seconds()}s`);
  } finally {
    clearInterval(ticker);
  }
}

const runCommand: CommandRunner = (command, args, { cwd, env, onLine }) =>
  new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    let partial = '';
    const collect = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      output = (output + text).slice(-OUTPUT_TAIL_CHARS);
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line.trim()) onLine?.(line.trim());
    };
    child.stdout.on('data', collect);
    child.stderr.on('data', collect);
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, output }));
  });

async function isDirectory(p: string): Promise<boolean> {
  try {
    return (await fs.stat(p)).isDirectory();
  } catch {
    return false;
  }
}

/** The last lines of a command's output, for error messages. */
export function tail(output: string, lines = 20): string {
  return output.trimEnd().split('\n').slice(-lines).join('\n');
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
