import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { chownSync, existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * A throwaway PostgreSQL cluster that the chaos driver can take away and bring back on the same
 * port: `pg_ctl stop -m immediate` is what a crashed or unplugged database server looks like to
 * its clients (connections cut mid-statement, nothing rolled back politely), and the next start
 * runs crash recovery over the WAL, as a real restart would.
 *
 * harness/postgres/test-server.ts starts a cluster for the test suite, but it neither exposes the
 * data directory nor a stop that keeps the data, so the chaos run keeps a cluster of its own.
 */
export interface ChaosPostgres {
  readonly url: string;
  readonly port: number;
  readonly dataDir: string;
  /** The shell command that stops the cluster at once; the watchdog runs it if we die. */
  readonly stopImmediateCommand: string[];
  /** Crash-stops the server: every session is cut, nothing is flushed politely. */
  stopImmediately(): Promise<void>;
  /** Starts it again on the same port and data directory (crash recovery included). */
  start(): Promise<void>;
  isRunning(): boolean;
}

// fsync and full-page writes only matter if the machine itself loses power; the outages here
// kill the server processes, and what was written to the OS survives them. synchronous_commit
// stays ON on purpose: with it off, a commit acknowledged to a worker could vanish in an
// immediate stop, which would be a fault of this harness, not of the system under test.
const SERVER_SETTINGS = ['fsync=off', 'full_page_writes=off', 'max_connections=300'];

/**
 * Creates a cluster in `root` for `port` (or takes the one a previous run left there); call
 * start() to run it.
 */
export function createChaosPostgres(root: string, port: number): ChaosPostgres {
  const bin = findPostgresBinDir();
  const user = serverUser();
  mkdirSync(root, { recursive: true });
  if (user) chownSync(root, user.uid, user.gid);
  const dataDir = path.join(root, 'data');
  const logFile = path.join(root, 'server.log');

  const command = (tool: string, args: string[]): string[] =>
    user
      ? ['runuser', '-u', user.name, '--', path.join(bin, tool), ...args]
      : [path.join(bin, tool), ...args];
  // Asynchronous: the driver keeps serving the chaos hook and the webhooks while pg_ctl waits.
  const run = async (argv: string[]) => {
    const [file, ...args] = argv;
    try {
      await promisify(execFile)(file!, args, { cwd: root });
    } catch (error) {
      const stderr = (error as { stderr?: Buffer }).stderr?.toString().trim();
      throw new Error(`${args.join(' ')} failed: ${stderr || tail(logFile)}`, { cause: error });
    }
  };
  const options = [
    `-p ${port}`,
    '-h 127.0.0.1',
    `-k ${root}`,
    ...SERVER_SETTINGS.map((s) => `-c ${s}`),
  ];
  const stopImmediateCommand = command('pg_ctl', [
    'stop',
    '-D',
    dataDir,
    '-m',
    'immediate',
    '-w',
    '-t',
    '30',
  ]);

  // A data directory that already holds a cluster (`npm run cluster` keeps its data between
  // runs) is started as it is.
  if (!existsSync(path.join(dataDir, 'PG_VERSION'))) {
    execFileSync(
      ...split(
        command('initdb', [
          '-D',
          dataDir,
          '-U',
          'postgres',
          '--auth=trust',
          '-E',
          'UTF8',
          '--locale=C',
          '--no-sync',
        ]),
      ),
      { stdio: 'pipe' },
    );
  }
  const cluster: ChaosPostgres = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dataDir,
    stopImmediateCommand,
    async stopImmediately() {
      if (cluster.isRunning()) await run(stopImmediateCommand);
    },
    async start() {
      await run(
        command('pg_ctl', [
          'start',
          '-D',
          dataDir,
          '-l',
          logFile,
          '-w',
          '-t',
          '60',
          '-o',
          options.join(' '),
        ]),
      );
    },
    isRunning() {
      return existsSync(path.join(dataDir, 'postmaster.pid'));
    },
  };
  return cluster;
}

function split(argv: string[]): [string, string[]] {
  const [file, ...args] = argv;
  return [file!, args];
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
    if (hasServer(dir)) return dir;
  } catch {
    // No pg_config: look where Debian puts the server.
  }
  const debian = '/usr/lib/postgresql';
  const versions = existsSync(debian)
    ? readdirSync(debian).filter((v) => hasServer(path.join(debian, v, 'bin')))
    : [];
  const newest = versions.sort((a, b) => Number(b) - Number(a))[0];
  if (newest === undefined) {
    throw new Error(
      'The chaos run needs a PostgreSQL server (initdb, pg_ctl, postgres): apt-get install -y postgresql',
    );
  }
  return path.join(debian, newest, 'bin');
}

/** PostgreSQL refuses to run as root; as root, the cluster belongs to the `postgres` user. */
function serverUser(): { name: string; uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) =>
    Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8', stdio: 'pipe' }).trim());
  try {
    return { name: 'postgres', uid: id('-u'), gid: id('-g') };
  } catch {
    throw new Error('Running as root, but there is no "postgres" user to run PostgreSQL as.');
  }
}

function tail(file: string): string {
  try {
    return readFileSync(file, 'utf8').trim().split('\n').slice(-10).join('\n');
  } catch {
    return '(no server log)';
  }
}
