import { existsSync } from 'node:fs';
import { runCrashPoints, type CrashPointReport } from './crash-points';
import { allPointRuns, armName, rotatingShare, type PointRun } from './crash-matrix';
import { renderCrashPointTable } from './crash-points-table';
import { stillAlive } from '../../harness/process/app-processes';

// A share of the crash-point matrix (docs/chaos.md, "Every crash point, by list"), on SQLite and
// PostgreSQL: the process is SIGKILLed exactly at each point (a worker, an operator command, a
// migration), and the run must end with what its scenario expects. The share moves on every day
// (CRASH_POINTS_ROTATION replays one); `npm run crash-points` runs all of it.
const SHARE = Number(process.env.CRASH_POINTS_SHARE ?? 2);
const rotation = Number(process.env.CRASH_POINTS_ROTATION ?? Math.floor(Date.now() / 86_400_000));
let runs: PointRun[];
let report: CrashPointReport;

beforeAll(async () => {
  runs = rotatingShare(await allPointRuns(), SHARE, rotation);
  process.stdout.write(
    `crash points, rotation ${rotation} (CRASH_POINTS_ROTATION=${rotation} replays it): ` +
      `${runs.map((r) => `${armName(r)} (${r.scenario})`).join(', ')}\n`,
  );
  report = await runCrashPoints({ databases: ['sqlite', 'postgres'], runs, log: () => undefined });
  process.stdout.write(`${renderCrashPointTable(report, 'npx jest dev/chaos/crash-points')}\n`);
}, 300_000);

describe('crash points (a rotating share of the list)', () => {
  it('carries out every run of the share on both databases', () => {
    expect(report.error).toBeUndefined();
    expect(report.outcomes).toHaveLength(2 * runs.length);
  });

  it('hits every point: the worker is killed there and the history shows the attempt lost', () => {
    const missed = report.outcomes.filter((o) => !o.hit);
    expect(missed.map((o) => `${o.database} ${armName(o.run)}: ${o.evidence}`)).toEqual([]);
  });

  it("ends with the scenario's counts: payments, shipments, mails, points, alerts, failed runs", () => {
    const failed = report.outcomes.filter((o) => o.verdict === 'FAIL');
    expect(failed.map((o) => `${o.database} ${armName(o.run)}: ${o.problems.join('; ')}`)).toEqual(
      [],
    );
  });

  it('leaves no process running and no run directory behind', () => {
    expect(report.pids.length).toBeGreaterThan(0);
    expect(stillAlive(report.pids)).toEqual([]);
    expect(existsSync(report.runDir)).toBe(false);
  });
});
