import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';

/**
 * The one way the harness runs PostgreSQL: a cluster of its own in a directory, on 127.0.0.1,
 * from Debian's server programs. The test suite's throwaway server (./test-server.ts), the chaos
 * and crash-point runs and the multi-service Temporal cluster all start it here.
 *
 * `stopImmediately()` (`pg_ctl stop -m immediate`) is what a crashed or unplugged database server
 * looks like to its clients (connections cut mid-statement, nothing rolled back politely), and
 * the next `start()` runs crash recovery over the WAL, as a real restart would.
 */
export interface PostgresCluster {
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** The command that stops the cluster at once; a watchdog runs it if we die. */
  readonly stopImmediateCommand: string[];
  /** Crash-stops the server: every session is cut, nothing is flushed politely. */
  stopImmediately(): Promise<void>;
  /** Starts it (again) on its port and data directory, crash recovery included. */
  start(): Promise<void>;
  isRunning(): boolean;
  /** Stops the server if it runs (politely if it can), then deletes `root`. */
  destroy(): void;
}

export const INSTALL_HINT =
  "Install Debian's PostgreSQL server (apt-get install -y postgresql), or point " +
  'TEST_POSTGRES_URL at an existing server (postgres://user@host:port/db, as a superuser).';

// fsync and full-page writes only matter if the machine itself loses power; the outages the chaos
// runs cause kill the server processes, and what was written to the OS survives them.
// synchronous_commit stays ON on purpose: with it off, a commit acknowledged to a worker could
// vanish in an immediate stop, which would be a fault of the harness, not of the system under test.
export const CRASH_SAFE_SETTINGS = ['fsync=off', 'full_page_writes=off', 'max_connections=300'];

/**
 * Creates a cluster in `root` for `port` (or takes the one a previous run left there: `npm run
 * cluster` keeps its data between runs); call start() to run it. `settings` are `-c` options.
 */
export function createPostgresCluster(
  root: string,
  port: number,
  settings: readonly string[] = CRASH_SAFE_SETTINGS,
): PostgresCluster {
  const bin = findPostgresBinDir();
  const user = serverUser();
  mkdirSync(root, { recursive: true });
  if (user) chownSync(root, user.uid, user.gid);
  // Data, log and socket under one root that the server user owns. The socket sits in the root
  // itself to stay under the 107-byte limit on socket paths.
  const dataDir = path.join(root, 'data');
  const logFile = path.join(root, 'server.log');

  const command = (tool: string, args: string[]): string[] =>
    user
      ? ['runuser', '-u', user.name, '--', path.join(bin, tool), ...args]
      : [path.join(bin, tool), ...args];
  // Asynchronous: a chaos driver keeps serving its hooks and webhooks while pg_ctl waits.
  const run = async (argv: string[]) => {
    const [file, ...args] = argv;
    try {
      await promisify(execFile)(file!, args, { cwd: root });
    } catch (error) {
      const stderr = (error as { stderr?: Buffer | string }).stderr?.toString().trim();
      throw new Error(
        `${args.join(' ')} failed: ${stderr}\nThe end of the server's log:\n${tail(logFile)}`,
        { cause: error },
      );
    }
  };
  const stopCommand = (mode: 'fast' | 'immediate') =>
    command('pg_ctl', ['stop', '-D', dataDir, '-m', mode, '-w', '-t', '30']);
  const options = [`-p ${port}`, '-h 127.0.0.1', `-k ${root}`, ...settings.map((s) => `-c ${s}`)];

  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    const [file, ...args] = command('initdb', [
      ...['-D', dataDir, '-U', 'postgres', '--auth=trust'],
      ...['-E', 'UTF8', '--locale=C', '--no-sync'],
    ]);
    execFileSync(file!, args, { stdio: 'pipe', cwd: root });
  }
  const cluster: PostgresCluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dataDir,
    stopImmediateCommand: stopCommand('immediate'),
    async stopImmediately() {
      if (cluster.isRunning()) await run(stopCommand('immediate'));
    },
    async start() {
      const start = ['start', '-D', dataDir, '-l', logFile, '-w', '-t', '60'];
      await run(command('pg_ctl', [...start, '-o', options.join(' ')]));
    },
    isRunning() {
      return existsSync(path.join(dataDir, 'postmaster.pid'));
    },
    destroy() {
      try {
        if (cluster.isRunning()) {
          try {
            execArgv(stopCommand('fast'));
          } catch {
            // A fast stop waits for open sessions to roll back; an immediate one does not wait.
            execArgv(stopCommand('immediate'));
          }
        }
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    },
  };
  return cluster;
}

/** The cluster the chaos, crash-point and Temporal cluster runs take away and bring back. */
export type ChaosPostgres = PostgresCluster;
export const createChaosPostgres = (root: string, port: number): ChaosPostgres =>
  createPostgresCluster(root, port, CRASH_SAFE_SETTINGS);

/** Whether this machine has PostgreSQL's server programs (Debian's `postgresql` package). */
export function postgresServerInstalled(): boolean {
  try {
    findPostgresBinDir();
    return true;
  } catch {
    return false;
  }
}

function execArgv(argv: string[]): void {
  const [file, ...args] = argv;
  execFileSync(file!, args, { stdio: 'pipe' });
}

/** `pg_config --bindir` when it holds a server, else the newest version under /usr/lib/postgresql. */
function findPostgresBinDir(): string {
  const hasServer = (dir: string) =>
    ['initdb', 'pg_ctl', 'postgres'].every((tool) => existsSync(path.join(dir, tool)));
  try {
    const dir = execFileSync('pg_config', ['--bindir'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    // libpq-dev alone ships a pg_config whose bindir holds no server.
    if (hasServer(dir)) return dir;
  } catch {
    // No pg_config on PATH: fall through to Debian's layout.
  }
  const debianRoot = '/usr/lib/postgresql';
  const versions = existsSync(debianRoot)
    ? readdirSync(debianRoot).filter((v) => hasServer(path.join(debianRoot, v, 'bin')))
    : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (newest === undefined) {
    throw new Error(
      `No PostgreSQL server binaries (initdb, pg_ctl, postgres) found. ${INSTALL_HINT}`,
    );
  }
  return path.join(debianRoot, newest, 'bin');
}

/** PostgreSQL refuses to run as root; as root, the server runs as the `postgres` system user. */
function serverUser(): { name: string; uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) =>
    Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8', stdio: 'pipe' }).trim());
  try {
    return { name: 'postgres', uid: id('-u'), gid: id('-g') };
  } catch {
    throw new Error(
      `Running as root, but there is no "postgres" system user to run the server as. ${INSTALL_HINT}`,
    );
  }
}

function tail(logFile: string): string {
  try {
    return readFileSync(logFile, 'utf8').trim().split('\n').slice(-20).join('\n');
  } catch {
    return '(no log written)';
  }
}
