import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { historyFromJson, type ManifestEntry } from '../../harness/histories';
import { workflowBundle, workflowBundleSwapping } from '../support/bundles';

// The replay gate: the histories of this build, committed under test/replay/histories/<set>/
// (recorded from real runs by `npm run record-histories -- <set>`), must replay against the
// workflow code as it is now. Every workflow is PINNED (src/workers/deployment.ts), so a run
// only ever replays on the build that started it: a change that makes a workflow issue other
// commands is a new build (record a new set, retire the old one to previous-build/), and the
// test of previous-build/ shows that such a change is detected, not waved through.
//
// Each replay runs inside its test, not in a beforeAll: npm run mutate counts only what a test
// runs as that test's coverage, and runs a mutant against the tests that covered it.

const HISTORIES_DIR = path.join(__dirname, 'histories');
/** The set of the build before this one: its runs finish on their own build, never here. */
const PREVIOUS_BUILD_DIR = path.join(__dirname, 'previous-build');

interface HistoryCase extends ManifestEntry {
  set: string;
}

/** Every set's manifest, read while jest collects the tests (test.each needs the list). */
function committedHistories(dir: string): HistoryCase[] {
  const sets = readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  return sets.flatMap((set) => {
    const manifest = JSON.parse(
      readFileSync(path.join(dir, set, 'manifest.json'), 'utf8'),
    ) as ManifestEntry[];
    return manifest.map((entry) => ({ ...entry, set }));
  });
}

const histories = committedHistories(HISTORIES_DIR);
const sets = [...new Set(histories.map((h) => h.set))];
const previousBuild = committedHistories(PREVIOUS_BUILD_DIR);

/**
 * Replays one set's histories against `bundle`: one replay worker per set, since workflow IDs
 * (order-1…) repeat across sets, not within one. Returns the histories that failed, with why.
 */
async function replaySet(
  bundle: WorkflowBundleWithSourceMap,
  set: string,
  from: { dir: string; cases: HistoryCase[] } = { dir: HISTORIES_DIR, cases: histories },
): Promise<string[]> {
  const inSet = from.cases.filter((h) => h.set === set);
  const replayed = Worker.runReplayHistories(
    { workflowBundle: bundle, replayName: `replay-${set}` },
    inSet.map((h) => ({
      workflowId: h.workflowId,
      history: historyFromJson(JSON.parse(readFileSync(path.join(from.dir, set, h.file), 'utf8'))),
    })),
  );
  const failed: string[] = [];
  let index = 0;
  for await (const result of replayed) {
    const history = inSet[index++]!;
    expect(result.workflowId).toBe(history.workflowId);
    if (result.error) {
      failed.push(
        `${set}/${history.file} (${history.workflowId}): ${result.error.name}: ${result.error.message}`,
      );
    }
  }
  expect(index).toBe(inSet.length);
  return failed;
}

/**
 * The same workflows with every retry number changed (test/replay/fixtures): the module the
 * workflows import as ../shared/retry-policies is swapped for the retuned one.
 */
function retunedBundle(): Promise<WorkflowBundleWithSourceMap> {
  return workflowBundleSwapping({
    request: /retry-policies$/,
    fixture: require.resolve('./fixtures/retuned-retry-policies'),
    importedFrom: (context) => !context.includes(`${path.sep}test${path.sep}replay`),
  });
}

describe('committed workflow histories', () => {
  it("exist: one set, this build's", () => {
    expect(sets).toHaveLength(1);
  });

  it('are each listed in their set manifest, and every listed file is there', () => {
    for (const set of sets) {
      const files = readdirSync(path.join(HISTORIES_DIR, set))
        .filter((f) => f.endsWith('.json') && f !== 'manifest.json')
        .sort();
      const listed = histories
        .filter((h) => h.set === set)
        .map((h) => h.file)
        .sort();
      expect({ set, files }).toEqual({ set, files: listed });
    }
  });

  // The bundle the payment worker runs: the workflows plus the failure-alert interceptor.
  it.each(sets)(
    'set %s replays without a non-determinism or any other error',
    async (set) => {
      expect(await replaySet(await workflowBundle(), set)).toEqual([]);
    },
    120_000,
  );

  it('replay with every retry number retuned (attempts, intervals, deadlines): retry policies are not workflow logic', async () => {
    const bundle = await retunedBundle();
    expect(bundle.code).toContain('retuned-retry-policies');
    const failed: string[] = [];
    for (const set of sets) failed.push(...(await replaySet(bundle, set)));
    expect(failed).toEqual([]);
  }, 180_000);

  it("of the previous build (before the order workflow recorded which run finished with an event) are reported as errors against this build's code, except the unchanged review alerts and stock workflow", async () => {
    expect(previousBuild.length).toBeGreaterThan(0);
    const failed = await replaySet(await workflowBundle(), 'v6', {
      dir: PREVIOUS_BUILD_DIR,
      cases: previousBuild,
    });
    // A failed run's alert now reports to its cause's digest instead of posting: changed too.
    const changed = previousBuild.filter(
      (h) =>
        h.workflowType === 'orderWorkflow' ||
        h.workflowType === 'paymentWorkflow' ||
        h.file === 'warehouse-failure-alertWorkflow.json',
    );
    expect(failed.map((f) => f.split(' ')[0]).sort()).toEqual(
      changed.map((h) => `v6/${h.file}`).sort(),
    );
    // The order workflow now reads, before each event, whether a run finished with it.
    expect(failed.join('\n')).toMatch(
      /DeterminismViolationError: .*\[TMPRL1100\] Nondeterminism error/,
    );
  }, 120_000);
});
