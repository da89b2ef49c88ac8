import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { freePort } from '../ports';

/** A PostgreSQL server for the test run: its superuser URL, and how to get rid of it. */
export interface TestPostgres {
  url: string;
  stop(): Promise<void>;
}

const INSTALL_HINT =
  "Install Debian's PostgreSQL server (apt-get install -y postgresql), or point " +
  'TEST_POSTGRES_URL at an existing server (postgres://user@host:port/db, as a superuser).';

// Durability is pointless for a cluster deleted after the run; turning it off saves seconds.
// Test files run in parallel, each with its own pools: leave headroom over the default 100.
const SERVER_SETTINGS = [
  'fsync=off',
  'synchronous_commit=off',
  'full_page_writes=off',
  'max_connections=200',
];

/**
 * Starts a throwaway PostgreSQL cluster on 127.0.0.1, or uses TEST_POSTGRES_URL when that is set.
 * The cluster lives in a fresh temporary directory that `stop()` removes; a watchdog process
 * does the same if this process dies without calling `stop()` (a jest run killed midway).
 */
export async function startTestPostgres(): Promise<TestPostgres> {
  const existing = process.env.TEST_POSTGRES_URL;
  if (existing) return { url: existing, stop: () => Promise.resolve() };

  const cluster = createCluster(findPostgresBinDir(), serverUser());
  const watchdog = cluster.startWatchdog();
  const shutDown = () => {
    try {
      cluster.destroy();
    } finally {
      watchdog.kill();
    }
  };
  let port: number;
  try {
    cluster.init();
    port = await cluster.startOnFreePort();
  } catch (error) {
    shutDown();
    throw error;
  }

  let stopping: Promise<void> | undefined;
  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop: () => (stopping ??= Promise.resolve().then(shutDown)),
  };
}

interface ServerUser {
  name: string;
  uid: number;
  gid: number;
}

function createCluster(bin: string, user: ServerUser | undefined) {
  const root = mkdtempSync(path.join(tmpdir(), 'order-payments-pg-'));
  // Data, log and socket under one root that the server user owns. The socket sits in the root
  // itself to stay under the 107-byte limit on socket paths.
  const dataDir = path.join(root, 'data');
  const logFile = path.join(root, 'server.log');
  if (user) chownSync(root, user.uid, user.gid);

  const command = (tool: string, args: string[]): [string, string[]] =>
    user
      ? ['runuser', ['-u', user.name, '--', path.join(bin, tool), ...args]]
      : [path.join(bin, tool), args];
  const run = (tool: string, args: string[]) => {
    const [file, argv] = command(tool, args);
    execFileSync(file, argv, { stdio: 'pipe', cwd: root });
  };
  const stopCommand = (mode: 'fast' | 'immediate') =>
    command('pg_ctl', ['stop', '-D', dataDir, '-m', mode, '-w', '-t', '30']);

  return {
    init() {
      run('initdb', [
        '-D',
        dataDir,
        '-U',
        'postgres',
        '--auth=trust',
        '-E',
        'UTF8',
        '--locale=C',
        '--no-sync',
      ]);
    },

    /**
     * Another process can take the probed port before the server binds it, so a start that
     * fails on the port is retried on a new one.
     */
    async startOnFreePort(): Promise<number> {
      for (let attempt = 1; ; attempt++) {
        const port = await freePort();
        const options = [
          `-p ${port}`,
          '-h 127.0.0.1',
          `-k ${root}`,
          ...SERVER_SETTINGS.map((s) => `-c ${s}`),
        ];
        try {
          run('pg_ctl', [
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
          ]);
          return port;
        } catch (error) {
          const log = readLog(logFile);
          if (attempt < 3 && /could not bind|already in use/i.test(log)) continue;
          throw new Error(`PostgreSQL did not start; the end of its log:\n${log}`, {
            cause: error,
          });
        }
      }
    },

    /**
     * A shell that waits for this process to end, then stops the server and deletes its
     * directory. A clean stop kills it, so it acts only when this process died without one.
     * It is no descendant of this process (a shell that exits at once starts it) and leads a
     * session of its own (setsid): a kill of this process's tree, as StrykerJS does to a test
     * runner after a timeout, or of its process group, does not take the watchdog along.
     */
    startWatchdog() {
      const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
      const [file, args] = stopCommand('immediate');
      const script =
        `while kill -0 ${process.pid} 2>/dev/null; do sleep 1; done; ` +
        `${[file, ...args].map(quote).join(' ')} >/dev/null 2>&1; rm -rf ${quote(root)}`;
      const pid = Number(
        execFileSync(
          'sh',
          ['-c', `setsid sh -c ${quote(script)} </dev/null >/dev/null 2>&1 & echo $!`],
          { encoding: 'utf8' },
        ).trim(),
      );
      return {
        kill() {
          try {
            process.kill(pid);
          } catch {
            // Already gone.
          }
        },
      };
    },

    /** Stops the server if it runs, then removes everything it wrote. */
    destroy() {
      try {
        if (existsSync(path.join(dataDir, 'postmaster.pid'))) {
          try {
            execFileSync(...stopCommand('fast'), { stdio: 'pipe' });
          } catch {
            // A fast stop waits for open sessions to roll back; an immediate one does not wait.
            execFileSync(...stopCommand('immediate'), { stdio: 'pipe' });
          }
        }
      } finally {
        rmSync(root, { recursive: true, force: true });
      }
    },
  };
}

/** Whether this machine has PostgreSQL's server programs (Debian's `postgresql` package). */
export function postgresServerInstalled(): boolean {
  try {
    findPostgresBinDir();
    return true;
  } catch {
    return false;
  }
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
function serverUser(): ServerUser | undefined {
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

function readLog(logFile: string): string {
  try {
    return readFileSync(logFile, 'utf8').trim().split('\n').slice(-20).join('\n');
  } catch {
    return '(no log written)';
  }
}
