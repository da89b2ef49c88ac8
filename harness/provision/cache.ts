import { spawn } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import lockfile from 'proper-lockfile';

/**
 * The per-user cache the harness provisions servers into (the Temporal CLI and test server,
 * Prometheus, the multi-service Temporal server): each artifact built once, in a temporary folder
 * renamed into place when whole, under a proper-lockfile lock so that two processes never build
 * the same thing at once; commands run with their output's tail kept for error messages.
 */

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

export const runCommand: CommandRunner = (command, args, { cwd, env, onLine }) =>
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

export async function isDirectory(p: string): Promise<boolean> {
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

export function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
