import { createRequire } from 'node:module';
import path from 'node:path';
import SQLite from 'better-sqlite3';

/**
 * A failed SQLite statement throws an Error of the test file that runs it. better-sqlite3 builds
 * its errors (SqliteError) with the constructor its native addon was handed by the first file
 * that opened a database, and the addon is loaded once per process, where jest runs many test
 * files in one worker, each with globals (Error) of its own. In every later file the errors
 * were an earlier file's: not `instanceof Error`, so `expect(…).rejects.toThrow()` answered
 * "Received function did not throw" for a statement that had failed, and code under test that
 * asks `instanceof Error` took them for something else (issue 37: CHECK constraints that seemed
 * to let rows through on SQLite in full runs, never when a file ran alone).
 *
 * sqlite-errors-setup.ts, a jest setup file (jest.config.js), calls `adoptSqliteErrors` once per
 * test file, before the file imports anything.
 */

interface BetterSqlite3Addon {
  setErrorConstructor(constructor: unknown): void;
  /** better-sqlite3's own mark that the addon has its error constructor. */
  isInitialized?: boolean;
}

const root = path.dirname(require.resolve('better-sqlite3/package.json'));

/** better-sqlite3's addon, found its own way (`bindings`, lib/database.js): one per process. */
export function betterSqlite3Addon(): BetterSqlite3Addon {
  const bindings = createRequire(path.join(root, 'package.json'))('bindings') as (options: {
    bindings: string;
    module_root: string;
  }) => BetterSqlite3Addon;
  return bindings({ bindings: 'better_sqlite3.node', module_root: root });
}

/** Hands the addon the SqliteError of the test file running now (of its jest module registry). */
export function adoptSqliteErrors(): void {
  const addon = betterSqlite3Addon();
  addon.setErrorConstructor(SQLite.SqliteError);
  // So better-sqlite3 does not replace it with another when it opens its first database.
  addon.isInitialized = true;
}
