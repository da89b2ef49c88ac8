import { Client } from 'pg';
import { startTestPostgres, type TestPostgres } from '../../harness/postgres/test-server';

/**
 * A PostgreSQL cluster of its own that a test can freeze (SIGSTOP, as a hung host or a network
 * partition looks to the client) without disturbing the shared server other test files use.
 */
export interface FreezablePostgres {
  url: string;
  /** Stops the postmaster and every server process; returns what was stopped. */
  freeze(): Promise<number[]>;
  /** Resumes processes, all those still frozen unless told which. */
  thaw(pids?: number[]): void;
  /** The processes frozen now. */
  frozenPids(): number[];
  stop(): Promise<void>;
}

export async function startFreezablePostgres(): Promise<FreezablePostgres> {
  // startTestPostgres hands out the shared server when TEST_POSTGRES_URL is set.
  const shared = process.env.TEST_POSTGRES_URL;
  delete process.env.TEST_POSTGRES_URL;
  let server: TestPostgres;
  try {
    server = await startTestPostgres();
  } finally {
    if (shared !== undefined) process.env.TEST_POSTGRES_URL = shared;
  }
  const frozen = new Set<number>();

  const thaw = (pids: number[] = [...frozen]) => {
    for (const pid of pids) {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // Gone already.
      }
      frozen.delete(pid);
    }
  };

  return {
    url: server.url,
    async freeze() {
      const pids = await serverPids(server.url);
      for (const pid of pids) {
        process.kill(pid, 'SIGSTOP');
        frozen.add(pid);
      }
      return pids;
    },
    thaw,
    frozenPids: () => [...frozen],
    async stop() {
      thaw();
      await server.stop();
    },
  };
}

/** The postmaster (first line of postmaster.pid) and every process it started. */
async function serverPids(url: string): Promise<number[]> {
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    const pidFile = await client.query<{ text: string }>(
      "SELECT pg_read_file('postmaster.pid') AS text",
    );
    const postmaster = Number(pidFile.rows[0]!.text.split('\n')[0]);
    const children = await client.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE pid <> pg_backend_pid()',
    );
    // This admin session is ended before the freeze, so its backend is not counted.
    return [postmaster, ...children.rows.map((r) => r.pid)];
  } finally {
    await client.end();
  }
}
