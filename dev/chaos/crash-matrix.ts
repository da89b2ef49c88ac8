import {
  CRASH_POINTS,
  type CrashPhase,
  type CrashPointName,
} from '../../src/activities/crash-points';
import { migrationPoints } from '../../harness/migrations/points';
import { SCENARIOS, scenarioSpec, type Scenario } from './crash-scenarios';

/**
 * The rows of the crash matrix, derived from the declared points and the scenarios: each point
 * under each scenario that reaches it, on each side; and the checks of what a row's trace passed.
 */

export interface PointRun {
  /** A declared crash point, or for an operator action `<action> call <n>`. */
  point: string;
  phase: CrashPhase;
  scenario: Scenario;
  /** For an operator action: the server call after which the CLI dies (1-based). */
  call?: number;
}

/**
 * Every run of the matrix: each point under each scenario that reaches it, on each side; each
 * operator command after each server call; each migration between each two statements.
 */
export async function allPointRuns(): Promise<PointRun[]> {
  const declared = Object.keys(CRASH_POINTS) as CrashPointName[];
  const points = declared.flatMap((point) => {
    const { activity, kind } = CRASH_POINTS[point];
    const phases: CrashPhase[] = kind === 'reply' ? ['before'] : ['before', 'after'];
    const scenarios = scenariosReaching(activity);
    if (scenarios.length === 0) throw new Error(`no scenario reaches ${point} (${activity})`);
    return scenarios.flatMap((scenario) =>
      phases
        .filter((phase) => !unreached(scenario).includes(`${point}@${phase}`))
        .map((phase) => ({ point, phase, scenario })),
    );
  });
  const operator = (Object.keys(SCENARIOS) as Scenario[]).flatMap((scenario) => {
    const spec = scenarioSpec(scenario);
    if (spec.kind !== 'operator') return [];
    return spec.calls.map((method, i) => ({
      point: `${spec.action} call ${i + 1} ${method}`,
      phase: 'after' as const,
      scenario,
      call: i + 1,
    }));
  });
  const migrations = (await migrationPoints()).map((point) => ({
    point,
    phase: 'after' as const,
    scenario: 'migration' as const,
  }));
  return [...points, ...operator, ...migrations];
}

function scenariosReaching(activity: string): Scenario[] {
  return (Object.keys(SCENARIOS) as Scenario[]).filter((scenario) => {
    const spec = scenarioSpec(scenario);
    return 'activities' in spec && spec.activities.includes(activity);
  });
}

function unreached(scenario: Scenario): readonly string[] {
  const spec = scenarioSpec(scenario);
  return spec.kind === 'order' ? (spec.unreached ?? []) : [];
}

/** The points (with side) a scenario declares it passes: what its runs' traces may contain. */
export function declaredArms(scenario: Scenario): Set<string> {
  const spec = scenarioSpec(scenario);
  if (!('activities' in spec)) return new Set();
  const arms = (Object.keys(CRASH_POINTS) as CrashPointName[])
    .filter((point) => spec.activities.includes(CRASH_POINTS[point].activity))
    .flatMap((point) => [`${point}@before`, `${point}@after`]);
  return new Set(arms.filter((arm) => !unreached(scenario).includes(arm)));
}

/** The points passed (with side) that the scenario does not declare, each once. */
export function undeclaredArms(scenario: Scenario, passed: readonly string[]): string[] {
  const declared = declaredArms(scenario);
  return [...new Set(passed)].filter((arm) => !declared.has(arm));
}

/**
 * A fixed-size share of the matrix that moves on with `rotation` (a day number, or a CI run
 * number): consecutive rotations take consecutive slices, so every row comes round.
 */
export function rotatingShare(
  runs: readonly PointRun[],
  size: number,
  rotation: number,
): PointRun[] {
  if (size >= runs.length) return [...runs];
  const start = (rotation * size) % runs.length;
  return Array.from({ length: size }, (_, i) => runs[(start + i) % runs.length]!);
}

/** The arm file of a run: `<point>@<side>`, or `call-<n>` for an operator action. */
export function armName(run: PointRun): string {
  return run.call === undefined ? `${run.point}@${run.phase}` : `call-${run.call}`;
}
