import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { NormalModuleReplacementPlugin } from 'webpack';
import type { ManifestEntry } from '../../dev/record-histories';
import { historyFromJson } from './history-json';
import { workflowBundle } from '../support/bundles';

// Safe deploys: every history committed under test/replay/histories/<set>/ (recorded from real
// runs by `npm run record-histories -- <set>`) must replay against the workflow code as it is
// now. A change that would make a running workflow issue different commands (a reordered or
// removed activity, a new timer, an unguarded upsert) fails here instead of in production,
// where it would leave the in-flight runs stuck on a non-determinism error.

const HISTORIES_DIR = path.join(__dirname, 'histories');

interface HistoryCase extends ManifestEntry {
  set: string;
}

/** Every set's manifest, read while jest collects the tests (test.each needs the list). */
function committedHistories(): HistoryCase[] {
  const sets = readdirSync(HISTORIES_DIR, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name)
    .sort();
  return sets.flatMap((set) => {
    const manifest = JSON.parse(
      readFileSync(path.join(HISTORIES_DIR, set, 'manifest.json'), 'utf8'),
    ) as ManifestEntry[];
    return manifest.map((entry) => ({ ...entry, set }));
  });
}

const histories = committedHistories();
const errors = new Map<HistoryCase, Error | undefined>();
const retunedErrors = new Map<HistoryCase, Error | undefined>();
let retunedBundle: WorkflowBundleWithSourceMap;

/** Replays every committed history against `workflowBundle`, recording each one's error. */
async function replayAll(
  workflowBundle: WorkflowBundleWithSourceMap,
  into: Map<HistoryCase, Error | undefined>,
) {
  const sets = [...new Set(histories.map((h) => h.set))];
  for (const set of sets) {
    // One replay worker per set: workflow IDs (order-1…) repeat across sets, not within one.
    const inSet = histories.filter((h) => h.set === set);
    const replayed = Worker.runReplayHistories(
      { workflowBundle, replayName: `replay-${set}` },
      inSet.map((h) => ({
        workflowId: h.workflowId,
        history: historyFromJson(
          JSON.parse(readFileSync(path.join(HISTORIES_DIR, set, h.file), 'utf8')),
        ),
      })),
    );
    let index = 0;
    for await (const result of replayed) {
      const history = inSet[index++]!;
      expect(result.workflowId).toBe(history.workflowId);
      into.set(history, result.error);
    }
  }
}

beforeAll(async () => {
  // The bundle the payment worker runs: the workflows plus the failure-alert interceptor.
  await replayAll(await workflowBundle(), errors);
  // The same workflows with every retry number changed (test/replay/fixtures): the module the
  // workflows import as ../shared/retry-policies is swapped for the retuned one.
  const retuned = require.resolve('./fixtures/retuned-retry-policies');
  retunedBundle = await workflowBundle({
    webpackConfigHook: (config) => {
      config.plugins = [
        ...(config.plugins ?? []),
        new NormalModuleReplacementPlugin(
          /retry-policies$/,
          (resource: { context: string; request: string }) => {
            if (!resource.context.includes(`${path.sep}test${path.sep}replay`))
              resource.request = retuned;
          },
        ),
      ];
      return config;
    },
  });
  await replayAll(retunedBundle, retunedErrors);
}, 180_000);

describe('committed workflow histories', () => {
  it('exist, at least two sets (before and after the last patched change)', () => {
    expect(new Set(histories.map((h) => h.set)).size).toBeGreaterThanOrEqual(2);
  });

  it('are each listed in their set manifest, and every listed file is there', () => {
    const sets = [...new Set(histories.map((h) => h.set))];
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

  it.each(histories.map((h) => [`${h.set}/${h.file}`, h] as const))(
    '%s replays without a non-determinism or any other error',
    (_name, history) => {
      expect(errors.has(history)).toBe(true);
      const error = errors.get(history);
      if (error) {
        throw new Error(
          `${history.set}/${history.file} (${history.workflowId}) no longer replays: ` +
            `${error.name}: ${error.message}`,
          { cause: error },
        );
      }
    },
  );

  it('replay with every retry number retuned (attempts, intervals, deadlines): retry policies are not workflow logic', () => {
    expect(retunedBundle.code).toContain('retuned-retry-policies');
    const failed = histories
      .filter((h) => retunedErrors.get(h) !== undefined || !retunedErrors.has(h))
      .map((h) => `${h.set}/${h.file}: ${retunedErrors.get(h)?.message ?? 'not replayed'}`);
    expect(failed).toEqual([]);
  });
});
