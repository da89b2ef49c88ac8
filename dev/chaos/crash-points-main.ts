import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { Option } from 'commander';
import { format, resolveConfig } from 'prettier';
import { CRASH_POINTS, type CrashPointName } from '../../src/activities/crash-points';
import { createTool, parseTool, UsageError, wholeNumber } from '../../src/cli/command-line';
import { runCrashPoints, type Database, type Fault } from './crash-points';
import { SCENARIOS } from './crash-scenarios';
import { allPointRuns, armName, rotatingShare, type PointRun } from './crash-matrix';
import { renderCrashPointTable } from './crash-points-table';

const FAULTS: readonly Fault[] = ['worker-kill', 'temporal-restart', 'db-down', 'db-hung'];

const commandLine = createTool(
  'npm run crash-points --',
  'The crash-point matrix (docs/chaos.md, "Every crash point, by list"): every declared point, ' +
    'on both sides, under every scenario that reaches it, and the operator commands killed ' +
    'after each server call, on SQLite and PostgreSQL side by side. The whole matrix writes ' +
    'reports/crash-points.md; a selection prints its table only.',
)
  .addOption(new Option('--db <db>', 'one database').choices(['sqlite', 'postgres']))
  .option('--scenario <a,b>', `these scenarios (${Object.keys(SCENARIOS).join(', ')})`)
  .option('--point <texts>', 'rows whose point or arm contains one of these comma-separated texts')
  .option('--only <text>', 'rows whose "<arm> <scenario>" contains the text')
  .option('--share <n>', 'a rotating share of n rows of the selection (CI)')
  .option('--rotation <n>', 'which share (default: CRASH_POINTS_ROTATION, else the day number)')
  .addOption(
    new Option(
      '--fault <f>',
      'the fault at each row; the whole list under a fault writes reports/crash-points-<f>.md',
    )
      .choices(FAULTS)
      .default('worker-kill'),
  )
  .option('--list', 'print the selected rows and exit')
  .addHelpText('after', '\nExits 1 when a row failed, 2 when the run could not be made.');

interface Selection {
  db?: Database;
  scenarios?: string[];
  points?: string[];
  only?: string;
  share?: number;
  rotation: number;
  fault: Fault;
  list: boolean;
}

function selection(_args: string[], options: Record<string, unknown>): Selection {
  const text = (name: string) => options[name] as string | undefined;
  const scenarios = text('scenario')?.split(',');
  const unknown = scenarios?.filter((s) => !(s in SCENARIOS));
  if (unknown?.length) throw new UsageError(`Unknown scenario(s): ${unknown.join(', ')}.`);
  const rotation = process.env.CRASH_POINTS_ROTATION;
  return {
    db: text('db') as Database | undefined,
    scenarios,
    points: text('point')?.split(','),
    only: text('only'),
    share: wholeNumber('--share', text('share'), 1),
    rotation:
      wholeNumber('--rotation', text('rotation')) ??
      wholeNumber('CRASH_POINTS_ROTATION', rotation === '' ? undefined : rotation) ??
      Math.floor(Date.now() / 86_400_000),
    fault: options.fault as Fault,
    list: options.list === true,
  };
}

/** The rows a fault applies to: the server restart at replies, the database faults at points. */
function underFault(run: PointRun, fault: Fault): boolean {
  if (fault === 'worker-kill') return true;
  if (run.call !== undefined || run.scenario === 'migration') return false;
  return fault !== 'temporal-restart' || CRASH_POINTS[run.point as CrashPointName].kind === 'reply';
}

async function main(): Promise<number> {
  const line = await parseTool(commandLine, selection);
  if (line.kind === 'exit') return line.code;
  const { db, scenarios, points, only, share, rotation, fault } = line.work;
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
  const runs = share ? rotatingShare(selected, share, rotation) : selected;
  if (share) {
    process.stderr.write(
      `[crash-points] share ${runs.length} of ${selected.length} rows, rotation ${rotation} ` +
        `(--rotation ${rotation} replays it; the whole matrix every ${Math.ceil(selected.length / share)} rotations)\n`,
    );
  }
  if (line.work.list) {
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
