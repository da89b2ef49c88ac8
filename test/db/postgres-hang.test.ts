import { sql } from 'kysely';
import { createDatabase, isDatabaseUnavailable } from '../../src/db/connection';
import { startFreezablePostgres, type FreezablePostgres } from './hung-postgres';

// The server's statement_timeout in src/db/connection.ts; a hung server never enforces it.
const STATEMENT_TIMEOUT_MS = 5_000;

describe('PostgreSQL that hangs (SIGSTOP of the server)', () => {
  let server: FreezablePostgres;
  beforeAll(async () => {
    server = await startFreezablePostgres();
  }, 120_000);
  afterAll(async () => {
    await server?.stop();
  });

  const backendPid = async (db: ReturnType<typeof createDatabase>['db']) =>
    (await sql<{ pid: number }>`SELECT pg_backend_pid() AS pid`.execute(db)).rows[0]!.pid;

  it('fails a query within a bounded time instead of hanging, and recovers after SIGCONT', async () => {
    // One connection, so a timed-out client put back in the pool would be the one reused.
    const handle = createDatabase(server.url, { poolMax: 1 });
    try {
      const stuckBackend = await backendPid(handle.db);
      await server.freeze();
      let failure: unknown;
      const started = Date.now();
      try {
        await sql`SELECT 1`.execute(handle.db);
      } catch (error) {
        failure = error;
      }
      const elapsed = Date.now() - started;
      expect(failure).toBeInstanceOf(Error);
      expect((failure as Error).message).toMatch(/timeout/i);
      expect(isDatabaseUnavailable(failure)).toBe(true);
      expect(elapsed).toBeLessThan(STATEMENT_TIMEOUT_MS + 3_000);

      // The server comes back, except the backend that held the timed-out query (a connection
      // lost in a partition). The pool must open a new connection, not queue behind that one.
      server.thaw(server.frozenPids().filter((pid) => pid !== stuckBackend));
      const afterThaw = Date.now();
      const pid = await backendPid(handle.db);
      expect(pid).not.toBe(stuckBackend);
      expect(Date.now() - afterThaw).toBeLessThan(3_000);

      server.thaw();
      expect((await sql<{ one: number }>`SELECT 1 AS one`.execute(handle.db)).rows).toEqual([
        { one: 1 },
      ]);
    } finally {
      server.thaw();
      await handle.close();
    }
  }, 60_000);
});
