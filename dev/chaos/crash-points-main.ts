import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { format, resolveConfig } from 'prettier';
import { CRASH_POINTS, type CrashPointName } from '../../src/activities/crash-points';
import { runCrashPoints, type Database, type Fault } from './crash-points';
import { SCENARIOS } from './crash-scenarios';
import { allPointRuns, armName, rotatingShare, type PointRun } from './crash-matrix';
import { renderCrashPointTable } from './crash-points-table';

const USAGE = `npm run crash-points [-- options]

The crash-point matrix (docs/chaos.md, "Every crash point, by list"): every declared point, on
both sides, under every scenario that reaches it, and the operator commands killed after each
server call, on SQLite and PostgreSQL side by side. The whole matrix writes
reports/crash-points.md; a selection prints its table only.

  --db sqlite|postgres     one database
  --scenario a,b           these scenarios (${Object.keys(SCENARIOS).join(', ')})
  --point <text>[,<text>]  rows whose point or arm contains one of the texts
  --only <text>            rows whose "<arm> <scenario>" contains the text
  --share <n>              a rotating share of n rows of the selection (CI)
  --rotation <n>           which share (default: CRASH_POINTS_ROTATION, else the day number)
  --fault <f>              worker-kill (default), temporal-restart, db-down, db-hung;
                           the whole list under a fault writes reports/crash-points-<f>.md
  --list                   print the selected rows and exit

Exits 1 when a row failed, 2 when the run could not be made.`;

/** The rows a fault applies to: the server restart at replies, the database faults at points. */
function underFault(run: PointRun, fault: Fault): boolean {
  if (fault === 'worker-kill') return true;
  if (run.call !== undefined || run.scenario === 'migration') return false;
  return fault !== 'temporal-restart' || CRASH_POINTS[run.point as CrashPointName].kind === 'reply';
}

async function main(): Promise<number> {
  const text = { type: 'string' } as const;
  const { values } = parseArgs({
    options: {
      ...{ db: text, scenario: text, point: text, only: text, share: text, rotation: text },
      ...{ fault: text, list: { type: 'boolean' }, help: { type: 'boolean' } },
    },
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    return 0;
  }
  const { db, only, share } = values;
  const points = values.point?.split(',');
  const scenarios = values.scenario?.split(',');
  const fault = (values.fault ?? 'worker-kill') as Fault;
  if (!['worker-kill', 'temporal-restart', 'db-down', 'db-hung'].includes(fault)) {
    throw new Error('--fault must be worker-kill, temporal-restart, db-down or db-hung');
  }
  if (db !== undefined && db !== 'sqlite' && db !== 'postgres') {
    throw new Error('--db must be sqlite or postgres');
  }
  const unknown = scenarios?.filter((s) => !(s in SCENARIOS));
  if (unknown?.length) throw new Error(`unknown scenario(s): ${unknown.join(', ')}`);
  // Only PostgreSQL can be taken away; the server restart is at the moment an activity reports.
  const databases: Database[] = db
    ? [db]
    : fault === 'db-down' || fault === 'db-hung'
      ? ['postgres']
      : ['sqlite', 'postgres'];
  const everyRun = (await allPointRuns()).filter((r) => underFault(r, fault));
  const selected = everyRun
    .filter((r) => !scenarios || scenarios.includes(r.scenario))
    .filter((r) => !points || points.some((p) => r.point.includes(p) || armName(r).includes(p)))
    .filter((r) => !only || `${armName(r)} ${r.scenario}`.includes(only));
  const rotation = Number(
    values.rotation ?? process.env.CRASH_POINTS_ROTATION ?? Math.floor(Date.now() / 86_400_000),
  );
  const runs = share ? rotatingShare(selected, Number(share), rotation) : selected;
  if (share) {
    process.stderr.write(
      `[crash-points] share ${runs.length} of ${selected.length} rows, rotation ${rotation} ` +
        `(--rotation ${rotation} replays it; the whole matrix every ${Math.ceil(selected.length / Number(share))} rotations)\n`,
    );
  }
  if (values.list) {
    for (const r of runs) process.stdout.write(`${r.scenario}\t${r.point}\t${r.phase}\n`);
    return 0;
  }
  const controller = new AbortController();
  process.once('SIGINT', () => controller.abort());
  process.once('SIGTERM', () => controller.abort());
  const report = await runCrashPoints({ databases, runs, fault, signal: controller.signal });
  const command = `npm run crash-points${fault === 'worker-kill' ? '' : ` -- --fault ${fault}`}`;
  const table = renderCrashPointTable(report, command);
  if (runs.length === everyRun.length && !db) {
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
