import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { format, resolveConfig } from 'prettier';
import { CRASH_POINTS } from '../../src/activities/crash-points';
import { allPointRuns, armName, runCrashPoints, type Database, type Fault } from './crash-points';
import { renderCrashPointTable } from './crash-points-table';

/**
 * `npm run crash-points`: every declared crash point, on both sides, on SQLite and PostgreSQL;
 * writes reports/crash-points.md. `-- --db sqlite`, `-- --only <substring>` narrow it (the table
 * is then printed, not written). `-- --fault temporal-restart` restarts the Temporal server at
 * every reply point instead, `-- --fault db-down` stops PostgreSQL at every point and
 * `-- --fault db-hung` freezes it (SIGSTOP: every statement hangs); each writes
 * reports/crash-points-<fault>.md. Exits 1 when a point failed, 2 when the run could not be made.
 */
async function main(): Promise<number> {
  const argv = process.argv.slice(2);
  const value = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const db = value('--db');
  const only = value('--only');
  const fault = (value('--fault') ?? 'worker-kill') as Fault;
  if (!['worker-kill', 'temporal-restart', 'db-down', 'db-hung'].includes(fault)) {
    throw new Error('--fault must be worker-kill, temporal-restart, db-down or db-hung');
  }
  // Only PostgreSQL can be taken away; the server restart is at the moment an activity reports.
  const databases: Database[] = db
    ? [db as Database]
    : fault === 'db-down' || fault === 'db-hung'
      ? ['postgres']
      : ['sqlite', 'postgres'];
  const runs = allPointRuns()
    .filter((r) => fault !== 'temporal-restart' || CRASH_POINTS[r.point].kind === 'reply')
    .filter((r) => !only || `${armName(r)} ${r.scenario}`.includes(only));
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  process.once('SIGTERM', () => controller.abort());
  const report = await runCrashPoints({ databases, runs, fault, signal: controller.signal });
  const command = `npm run crash-points${fault === 'worker-kill' ? '' : ` -- --fault ${fault}`}`;
  const table = renderCrashPointTable(report, command);
  if (!db && !only) {
    const name = fault === 'worker-kill' ? 'crash-points.md' : `crash-points-${fault}.md`;
    const file = path.resolve(__dirname, '..', '..', 'reports', name);
    // Formatted as the repository formats Markdown (npm run format:check reads it too).
    const options = await resolveConfig(file);
    writeFileSync(file, await format(table, { ...options, parser: 'markdown' }));
    process.stderr.write(`[crash-points] table written to ${file}\n`);
  }
  process.stdout.write(`${table}\n`);
  if (report.error) return 2;
  return report.outcomes.every((o) => o.verdict === 'PASS') ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(2);
  },
);
