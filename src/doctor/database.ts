import { existsSync } from 'node:fs';
import { Migrator } from 'kysely';
import {
  createDatabase,
  createPartnerPausesRepository,
  knownMigrations,
  parseDatabaseUrl,
  type PartnerPause,
} from '../db';
import { errorMessage, pingDatabase, withDeadline } from '../monitoring/probes';
import { type CheckResult, couldNotTell, result, timedOut } from './types';

/**
 * The database answers, and every migration this build knows has been applied to it. Read-only:
 * a missing SQLite file is reported, not created.
 */
export async function checkDatabase(
  databaseUrl: string,
  options: { timeoutMs: number },
): Promise<CheckResult[]> {
  const shown = redact(databaseUrl);
  const skipMigrations = result('migrations', 'SKIP', 'database not reachable');
  let location;
  try {
    location = parseDatabaseUrl(databaseUrl);
  } catch (error) {
    return [result('database', 'FAIL', errorMessage(error), 'fix DATABASE_URL'), skipMigrations];
  }
  if (location.dialect === 'sqlite' && location.filename !== ':memory:') {
    if (!existsSync(location.filename)) {
      return [
        result(
          'database',
          'FAIL',
          `no database file at ${location.filename}`,
          'create and migrate it: npm run migrate (or fix DATABASE_URL)',
        ),
        skipMigrations,
      ];
    }
  }

  const handle = createDatabase(databaseUrl, { poolMax: 1 });
  try {
    try {
      await withDeadline('the database', options.timeoutMs, () => pingDatabase(handle.db));
    } catch (error) {
      if (timedOut(error)) {
        return [
          couldNotTell('database', shown, options.timeoutMs, CHECK_SERVER),
          result('migrations', 'SKIP', 'the database did not answer in time'),
        ];
      }
      return [
        result(
          'database',
          'FAIL',
          `${shown}: ${errorMessage(error)}`,
          'check DATABASE_URL, that the server is up, and that this machine may connect to it',
        ),
        skipMigrations,
      ];
    }
    const database = result('database', 'OK', `${handle.dialect} ${shown}`);

    // Kysely's own bookkeeping, read with stub migrations: nothing is run or created.
    const names = knownMigrations();
    const migrator = new Migrator({
      db: handle.db,
      provider: {
        getMigrations: () =>
          Promise.resolve(
            Object.fromEntries(names.map((n) => [n, { up: () => Promise.resolve() }])),
          ),
      },
    });
    let state;
    try {
      state = await withDeadline('the database', options.timeoutMs, () => migrator.getMigrations());
    } catch (error) {
      if (!timedOut(error)) throw error;
      return [
        database,
        couldNotTell('migrations', 'the database', options.timeoutMs, CHECK_SERVER),
      ];
    }
    const pending = state.filter((m) => m.executedAt === undefined).map((m) => m.name);
    const migrations =
      pending.length === 0
        ? result('migrations', 'OK', `all ${names.length} applied (latest ${names.at(-1) ?? '-'})`)
        : result(
            'migrations',
            'FAIL',
            `${pending.length} of ${names.length} not applied: ${pending.join(', ')}`,
            'apply them before starting this build: npm run migrate',
            ['npm run migrate'],
          );
    if (pending.length > 0) return [database, migrations];
    let pauses;
    try {
      pauses = await withDeadline('the database', options.timeoutMs, () =>
        createPartnerPausesRepository(handle.db).list(),
      );
    } catch (error) {
      if (!timedOut(error)) throw error;
      const unknown = couldNotTell(
        'partner pauses',
        'the database',
        options.timeoutMs,
        CHECK_SERVER,
      );
      return [database, migrations, unknown];
    }
    return [database, migrations, ...pauses.filter((p) => p.resumedAt === null).map(pausedLine)];
  } finally {
    await handle.close();
  }
}

const CHECK_SERVER = 'check the database server’s load and health';

/** A paused partner: on purpose, but a pause nobody ends holds every order behind it. */
function pausedLine(pause: PartnerPause): CheckResult {
  const why = pause.reason ? ` (${pause.reason})` : '';
  return result(
    `partner paused: ${pause.partner}`,
    'WARN',
    `paused by ${pause.pausedBy} since ${pause.pausedAt}${why}: its calls are held`,
    `when it is healthy: npm run ops -- partner resume ${pause.partner} --rate N`,
  );
}

function redact(url: string): string {
  return url.replace(/\/\/([^:/@]*):[^@]*@/, '//$1:***@');
}
