import { spawn } from 'node:child_process';
import { once } from 'node:events';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { sql } from 'kysely';
import { knownMigrations, type MigrationPoint } from '../../src/db/migrate';
import { HOLD_AT_ENV, RELEASE_SIGNAL, type HoldMessage } from '../../harness/migrations/hold';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';

const ROOT = path.resolve(__dirname, '../..');
const HOLD_PRELOAD = path.join(ROOT, 'harness/migrations/hold.ts');
// A process that can reach the lock has had ample time to reach it by then, even on a busy machine.
const OVERLAP_MS = 3_000;

interface MigrateProcess {
  pid: number;
  /** The next line of the hold preload (hold, then released). */
  next(): Promise<HoldMessage>;
  exited: Promise<{
    code: number | null;
    signal: NodeJS.Signals | null;
    stdout: string;
    stderr: string;
  }>;
}

/** `npm run migrate`'s command, as its own process, with the hold preload. */
function startMigrate(url: string, holdAt?: MigrationPoint): MigrateProcess {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--import', HOLD_PRELOAD, 'src/cli/migrate.ts'],
    {
      cwd: ROOT,
      env: { ...process.env, DATABASE_URL: url, [HOLD_AT_ENV]: holdAt ?? '' },
      stdio: ['ignore', 'pipe', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const messages: HoldMessage[] = [];
  const waiting: Array<(message: HoldMessage) => void> = [];
  let buffered = '';
  (child.stdio[3] as Readable).on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    for (let end = buffered.indexOf('\n'); end >= 0; end = buffered.indexOf('\n')) {
      const message = JSON.parse(buffered.slice(0, end)) as HoldMessage;
      buffered = buffered.slice(end + 1);
      const waiter = waiting.shift();
      if (waiter) waiter(message);
      else messages.push(message);
    }
  });
  const exited = once(child, 'close').then(([code, signal]) => ({
    code: code as number | null,
    signal: signal as NodeJS.Signals | null,
    stdout,
    stderr,
  }));
  return {
    pid: child.pid!,
    next: () => {
      const message = messages.shift();
      if (message) return Promise.resolve(message);
      return Promise.race([
        new Promise<HoldMessage>((resolve) => waiting.push(resolve)),
        exited.then(({ code, stderr: err }) => {
          throw new Error(`migrate exited (${code}) before holding: ${err}`);
        }),
      ]);
    },
    exited,
  };
}

/** The migrations a `npm run migrate` said it applied. */
function appliedBy(stdout: string): string[] {
  const names = /^Applied \d+ migration\(s\) on \w+: (.*)$/m.exec(stdout)?.[1];
  return names === undefined ? [] : names.split(', ');
}

async function recordedMigrations(handle: TestDatabaseHandle): Promise<string[]> {
  const { rows } = await sql<{
    name: string;
  }>`select name from kysely_migration order by name`.execute(handle.db);
  return rows.map((r) => r.name);
}

async function columnsOf(handle: TestDatabaseHandle, table: string): Promise<string[]> {
  const tables = await handle.db.introspection.getTables();
  return (tables.find((t) => t.name === table)?.columns ?? []).map((c) => c.name);
}

describe.each(testDatabases)('npm run migrate as real processes ($name)', ({ create }) => {
  let handle: TestDatabaseHandle;
  const started: MigrateProcess[] = [];
  beforeEach(async () => {
    handle = await create({ migrate: false });
  });
  afterEach(async () => {
    for (const { pid } of started.splice(0)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await handle?.close();
  });
  const start = (holdAt?: MigrationPoint) => {
    const migrate = startMigrate(handle.url, holdAt);
    started.push(migrate);
    return migrate;
  };

  it.each([
    ['0001_create_orders_and_payments#1', ['0001_create_orders_and_payments']],
    ['0005_payment_recorded_by_run#1', ['0005_payment_recorded_by_run', '0006_alert_deliveries']],
  ] as const)(
    'killed at %s, it leaves none of that migration, and the next run applies it whole',
    async (point, remaining) => {
      const crashed = start(point);
      expect(await crashed.next()).toMatchObject({ type: 'hold', point });
      process.kill(crashed.pid, 'SIGKILL');
      expect(await crashed.exited).toMatchObject({ signal: 'SIGKILL' });

      const rerun = await start().exited;
      expect(rerun).toMatchObject({ code: 0, stderr: '' });
      const expectedApplied = knownMigrations().slice(knownMigrations().indexOf(remaining[0]));
      expect(appliedBy(rerun.stdout)).toEqual(expectedApplied);
      expect(await recordedMigrations(handle)).toEqual(knownMigrations());
      expect(await columnsOf(handle, 'payments')).toEqual(
        expect.arrayContaining(['recorded_by_run_id', 'first_for_order']),
      );
      if (remaining.length === 1) {
        expect(await columnsOf(handle, 'orders')).toContain('refund_review_requested_at');
      }
    },
  );

  it('two processes migrating at once apply each migration once, the second waiting for the first', async () => {
    const first = start('0001_create_orders_and_payments#1');
    expect(await first.next()).toMatchObject({ type: 'hold' });
    const second = start();
    // While the first holds its migration open, the second must wait for it, not apply beside it.
    const early = await Promise.race([
      second.exited,
      new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), OVERLAP_MS)),
    ]);
    expect(early).toBeUndefined();

    process.kill(first.pid, RELEASE_SIGNAL);
    const [a, b] = await Promise.all([first.exited, second.exited]);
    expect(a).toMatchObject({ code: 0, stderr: '' });
    expect(b).toMatchObject({ code: 0, stderr: '' });
    const applied = [...appliedBy(a.stdout), ...appliedBy(b.stdout)];
    expect(applied.sort()).toEqual(knownMigrations());
    expect(appliedBy(a.stdout)[0]).toBe('0001_create_orders_and_payments');
    expect(await recordedMigrations(handle)).toEqual(knownMigrations());
  });
});
