import { spawn } from 'node:child_process';
import { accessSync, constants } from 'node:fs';
import path from 'node:path';

/** A Debian package the tests need, and how to tell it is there. */
export interface SystemNeed {
  debianPackage: string;
  why: string;
  present: () => boolean;
}

/**
 * What `npm test` needs from the system that npm cannot bring. Java and Maven build the
 * time-skipping test server from Maven Central; PostgreSQL is one of the two databases every
 * repository test runs on. A variable that points at an existing server waives its need.
 */
export function testSystemNeeds(postgresInstalled: () => boolean): SystemNeed[] {
  const needs: SystemNeed[] = [];
  if (!process.env.TEMPORAL_TEST_SERVER_PATH) {
    needs.push(
      { debianPackage: 'openjdk-17-jre-headless', why: 'java', present: () => onPath('java') },
      { debianPackage: 'maven', why: 'mvn', present: () => onPath('mvn') },
    );
  }
  if (!process.env.TEST_POSTGRES_URL) {
    needs.push({
      debianPackage: 'postgresql',
      why: 'PostgreSQL server',
      present: postgresInstalled,
    });
  }
  return needs;
}

/**
 * Installs the missing packages with apt-get on the first run, so `npm install && npm test` is
 * all a fresh Debian machine needs. Only as root: elsewhere it stops with the command to run,
 * since a test run asking for a password would just hang.
 */
export async function ensureSystemPackages(
  needs: SystemNeed[],
  log: (line: string) => void,
): Promise<void> {
  const missing = needs.filter((need) => !need.present());
  if (missing.length === 0) return;
  const packages = missing.map((need) => need.debianPackage);
  const command = `apt-get update && apt-get install -y ${packages.join(' ')}`;
  const what = missing.map((need) => need.why).join(', ');
  if (process.getuid?.() !== 0 || !onPath('apt-get')) {
    throw new Error(`The tests need ${what}, which this machine lacks. Install them: ${command}`);
  }
  const started = Date.now();
  log(`Installing ${packages.join(' ')} with apt-get for ${what} (once, about a minute)…`);
  await run('apt-get', ['update', '-qq']);
  // Another apt run (unattended upgrades, a colleague) may hold the lock: wait rather than fail.
  await run('apt-get', [
    '-o',
    'DPkg::Lock::Timeout=300',
    'install',
    '-y',
    '-qq',
    '--no-install-recommends',
    ...packages,
  ]);
  const stillMissing = missing.filter((need) => !need.present()).map((need) => need.why);
  if (stillMissing.length > 0) {
    throw new Error(
      `apt-get installed ${packages.join(' ')}, yet ${stillMissing.join(', ')} is missing`,
    );
  }
  log(`Installed ${packages.join(' ')} in ${Math.round((Date.now() - started) / 1000)} s.`);
}

function onPath(command: string): boolean {
  return (process.env.PATH ?? '').split(path.delimiter).some((dir) => {
    try {
      accessSync(path.join(dir, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

/** Runs quietly; on failure the error carries the end of the output. */
function run(command: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    const keep = (chunk: Buffer) => {
      output = (output + chunk.toString()).slice(-8_000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.once('error', reject);
    child.once('close', (code) =>
      code === 0
        ? resolve()
        : reject(new Error(`${command} ${args.join(' ')} exited with ${code}:\n${output}`)),
    );
  });
}
