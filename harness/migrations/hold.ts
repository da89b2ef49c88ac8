import { writeSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';
import type { MigrationPoint, MigrationPointHook } from '../../src/db/migrate';

/**
 * Preloaded into a migrating process to stop it between two statements of a migration:
 *
 *   MIGRATION_HOLD_AT=0005_payment_recorded_by_run#1 \
 *     node --import tsx --import ./harness/migrations/hold.ts src/cli/migrate.ts
 *
 * (or the same two `--import`s in NODE_OPTIONS for `npm run migrate` / `npm start`). At that point
 * (harness/migrations/points.ts lists them all) it writes `{"type":"hold","point":…,"pid":…}` on file
 * descriptor 3, or on stderr when 3 is not open (npm run passes only 0-2 to its script), and
 * waits inside the migration's transaction, lock held, until it is killed (the crash) or sent
 * SIGUSR2 (it then says `released` and carries on). Only this preload installs the hook, on a
 * global symbol that src/db/migrate.ts reads once when it loads.
 */

export const HOLD_AT_ENV = 'MIGRATION_HOLD_AT';
export const RELEASE_SIGNAL = 'SIGUSR2';

export type HoldMessage = { type: 'hold' | 'released'; point: MigrationPoint; pid: number };

// The same symbol as src/db/migrate.ts's MIGRATION_POINT_HOOK; importing that module here would
// read the hook before it is set.
const MIGRATION_POINT_HOOK = Symbol.for('order-payments.migration-point-hook');
const CONTROL_FD = 3;

const holdAt = process.env[HOLD_AT_ENV];
if (isMainThread && holdAt) {
  const hook: MigrationPointHook = (point) => (point === holdAt ? hold(point) : undefined);
  (globalThis as { [MIGRATION_POINT_HOOK]?: MigrationPointHook })[MIGRATION_POINT_HOOK] = hook;
}

function hold(point: MigrationPoint): Promise<void> {
  return new Promise((resolve) => {
    // A signal listener alone does not keep the process alive while it waits.
    const keepAlive = setInterval(() => undefined, 60_000);
    process.once(RELEASE_SIGNAL, () => {
      clearInterval(keepAlive);
      send({ type: 'released', point, pid: process.pid });
      resolve();
    });
    send({ type: 'hold', point, pid: process.pid });
  });
}

function send(message: HoldMessage): void {
  const line = `${JSON.stringify(message)}\n`;
  try {
    writeSync(CONTROL_FD, line);
  } catch {
    process.stderr.write(line);
  }
}
