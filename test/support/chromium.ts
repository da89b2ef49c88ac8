import { execFile, execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { temporalCacheDir } from '../../harness/provision/cache';

/**
 * Finds the Chromium the Web UI tests drive, in this order:
 *
 * 1. `CHROMIUM_PATH`, when set: any Chromium you choose (`CHROMIUM_PATH=/usr/bin/chromium` for
 *    Debian's);
 * 2. the Chromium inside the `@sparticuz/chromium` dev dependency, unpacked once into the
 *    project's user cache. It comes first because package-lock.json pins it: every machine runs
 *    the tests on the same browser build, where Debian's moves with each `apt upgrade`, and
 *    `npm install` alone brings it;
 * 3. Debian's `/usr/bin/chromium`, when the npm build cannot run here (another CPU
 *    architecture, a missing system library).
 *
 * Global setup calls this once and hands the result to the test workers as `CHROMIUM_PATH`, so
 * no two workers unpack the browser at the same time.
 */
export async function findChromium(log: (line: string) => void): Promise<string> {
  const chosen = process.env.CHROMIUM_PATH;
  if (chosen) {
    if (!existsSync(chosen)) {
      throw new Error(`CHROMIUM_PATH is ${chosen}, which does not exist; unset it to use npm's.`);
    }
    return chosen;
  }
  let npmFailure: unknown;
  try {
    const npmChromium = await unpackNpmChromium(log);
    assertRuns(npmChromium);
    return npmChromium;
  } catch (error) {
    npmFailure = error;
  }
  if (existsSync(DEBIAN_CHROMIUM)) {
    log(`npm's Chromium cannot run here (${firstLine(npmFailure)}); using ${DEBIAN_CHROMIUM}`);
    return DEBIAN_CHROMIUM;
  }
  throw new Error(
    `No Chromium for the Web UI tests: the one from @sparticuz/chromium failed ` +
      `(${firstLine(npmFailure)}), and there is no ${DEBIAN_CHROMIUM}. Run \`npm install\`, ` +
      'or set CHROMIUM_PATH to a Chromium binary.',
    { cause: npmFailure },
  );
}

const DEBIAN_CHROMIUM = '/usr/bin/chromium';

/**
 * The package inflates its brotli'd browser into `os.tmpdir()` (/tmp/chromium, fonts,
 * SwiftShader), not atomically: a run killed midway, or two runs at once, would leave a
 * truncated binary that the package then reuses as is. So a child process inflates it with
 * TMPDIR pointed at a private staging folder, which is renamed into the cache only when whole;
 * of two runs racing, the second rename fails and that run uses the winner's copy.
 */
async function unpackNpmChromium(log: (line: string) => void): Promise<string> {
  const entry = require.resolve('@sparticuz/chromium');
  const packageRoot = path.resolve(path.dirname(entry), '..', '..');
  const { version } = JSON.parse(readFileSync(path.join(packageRoot, 'package.json'), 'utf8')) as {
    version: string;
  };
  const cacheDir = temporalCacheDir();
  const dir = path.join(cacheDir, `chromium-${version}`);
  const executable = path.join(dir, 'chromium');
  if (existsSync(executable)) return executable;

  await fs.mkdir(cacheDir, { recursive: true });
  await removeAbandonedStaging(cacheDir, `chromium-${version}.tmp-`);
  const staging = `${dir}.tmp-${process.pid}`;
  await fs.mkdir(staging);
  log(`Unpacking Chromium from @sparticuz/chromium ${version} into ${dir} (once, a few seconds)…`);
  try {
    // The package's CommonJS entry exports the class itself.
    const script = `require(${JSON.stringify(entry)}).executablePath().then((p) => process.stdout.write(p))`;
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], {
      env: { ...process.env, TMPDIR: staging },
    });
    if (stdout !== path.join(staging, 'chromium')) {
      throw new Error(`@sparticuz/chromium unpacked to ${stdout}, not into ${staging}`);
    }
    await fs.rename(staging, dir);
  } catch (error) {
    await fs.rm(staging, { recursive: true, force: true });
    if (existsSync(executable)) return executable;
    throw error;
  }
  return executable;
}

/** Staging folders of runs that died while unpacking (their pid is gone) are 200 MB each. */
async function removeAbandonedStaging(cacheDir: string, prefix: string): Promise<void> {
  for (const name of await fs.readdir(cacheDir)) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(name.slice(prefix.length));
    if (Number.isInteger(pid) && !isAlive(pid)) {
      await fs.rm(path.join(cacheDir, name), { recursive: true, force: true });
    }
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A binary for another architecture or missing a shared library fails here, not in Playwright. */
function assertRuns(executable: string): void {
  try {
    execFileSync(executable, ['--version'], { stdio: 'pipe', timeout: 30_000 });
  } catch (error) {
    const stderr = String((error as { stderr?: Buffer }).stderr ?? '').trim();
    throw new Error(`${executable} --version failed: ${stderr || firstLine(error)}`);
  }
}

function firstLine(error: unknown): string {
  const text = error instanceof Error ? error.message : String(error);
  return text.split('\n')[0] ?? text;
}
