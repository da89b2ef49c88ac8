import path from 'node:path';
import { sql } from 'kysely';
import { createDatabase, migrateToLatest } from '../../src/db';
import { noOrderCounts } from './crash-counts';
import type { PointOutcome } from './crash-points';
import { scenarioSpec } from './crash-scenarios';
import type { PointRun } from './crash-matrix';
import { controlMessage, runToExit } from './crash-settle';
import type { Stack } from './crash-stack';
import { allMigrationsLine, migrateSpec, schemaOf } from './migration-points';

/**
 * `npm run migrate` on a database of its own, held at the point by the migrations' preload and
 * SIGKILLed there, then run again as a deploy's next start would: it must finish, and the schema
 * must be what a clean migration leaves (recorded migrations, tables and columns, indexes).
 */
export async function runMigrationPoint(
  stack: Stack,
  run: PointRun,
  tag: string,
  outcome: PointOutcome,
): Promise<void> {
  const fresh = await freshDatabase(stack, `migrate_${tag}`);
  stack.referenceSchema ??= await referenceSchema(stack);
  let held: string | undefined;
  const interrupted = await oneShot(stack, `migrate-${tag}-1`, fresh, run.point, (message) => {
    held = message;
    return true;
  });
  const again = await oneShot(stack, `migrate-${tag}-2`, fresh, undefined, () => false);
  const schema = await schemaOf(fresh);
  outcome.hit = held === run.point && interrupted.signal === 'SIGKILL';
  if (held !== run.point) outcome.problems.push(`the migration never reached ${run.point}`);
  else if (!outcome.hit) outcome.problems.push('the migrating process was not killed there');
  if (again.code !== 0) outcome.problems.push(`run again: exit ${again.code ?? again.signal}`);
  if (schema !== stack.referenceSchema) {
    const line = schema.split('\n').find((l, i) => l !== stack.referenceSchema!.split('\n')[i]);
    outcome.problems.push(`schema differs from a clean migration's: ${line ?? schema}`);
  }
  if (!schema.startsWith(allMigrationsLine()))
    outcome.problems.push('not every migration recorded');
  outcome.counts = {
    ...noOrderCounts(),
    extra: schema === stack.referenceSchema ? 'schema as clean' : 'schema differs',
  };
  outcome.evidence = `migrate ${outcome.hit ? 'killed' : 'not killed'} at ${held ?? '–'}; run again: exit ${again.code ?? again.signal}`;
}

/** A database nobody has migrated: a new SQLite file, or a new database in the cluster. */
async function freshDatabase(stack: Stack, name: string): Promise<string> {
  if (!stack.postgres) return `sqlite:${path.join(stack.dataDir, `${name}.db`)}`;
  await sql.raw(`create database "${name}"`).execute(stack.db.db);
  const url = new URL(stack.postgres.url);
  url.pathname = `/${name}`;
  return url.toString();
}

async function referenceSchema(stack: Stack): Promise<string> {
  const url = await freshDatabase(stack, 'migrate_reference');
  const handle = createDatabase(url, { poolMax: 1 });
  const points = new Set<string>();
  try {
    await migrateToLatest(handle.db, { atPoint: (point) => void points.add(point) });
  } finally {
    await handle.close();
  }
  stack.migrationPoints = points;
  return schemaOf(url);
}

/**
 * Whether the run's point exists on the stack's database: a migration row is a point of
 * SQLite's, and a migration that rebuilds a table there (0011) has fewer statements on
 * PostgreSQL. Every other row exists on both.
 */
export async function reachesOn(stack: Stack, run: PointRun): Promise<boolean> {
  if (scenarioSpec(run.scenario).kind !== 'migration') return true;
  stack.referenceSchema ??= await referenceSchema(stack);
  return stack.migrationPoints!.has(run.point);
}

/** `npm run migrate` once, to its end; `onHold` says whether to SIGKILL it at a hold. */
async function oneShot(
  stack: Stack,
  name: string,
  databaseUrl: string,
  holdAt: string | undefined,
  onHold: (point: string) => boolean,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const migrate = stack.oneShot(
    migrateSpec({
      name,
      databaseUrl,
      holdAt,
      logDir: stack.logDir,
      onControlLine: (line, process) => {
        const message = controlMessage<{ type?: string; point?: string }>(line);
        if (message?.type === 'hold' && message.point && onHold(message.point)) {
          process.kill('SIGKILL');
        }
      },
    }),
  );
  return runToExit(migrate);
}
