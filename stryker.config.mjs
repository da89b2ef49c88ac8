// @ts-check
// Mutation testing of the modules that guard money and effects (issue 13): `npm run mutate`.
// docs/testing.md says how to run it, read a survivor, and what the bar is.

import { scopes } from './test/support/stryker/scopes.cjs';

const scope = process.env.MUTATE_SCOPE ?? '';
const mutate = scopes[scope];
if (!mutate) {
  throw new Error(`MUTATE_SCOPE=${scope}: use one of ${Object.keys(scopes).join(', ')}`);
}
const reportName = `mutation-${scope}`;

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  packageManager: 'npm',
  mutate,
  testRunner: 'jest',
  jest: {
    projectType: 'custom',
    // The project's config, narrowed to the test files of these modules.
    configFile: 'test/support/stryker/jest.config.js',
    // Jest's related-test search (by imports) keeps a mutant run from loading every selected
    // test file. Off for the workflows: their tests reach src/workflows through a webpack
    // bundle, not an import, so the search would skip them and report their mutants as
    // survivors; per-test coverage still picks their tests.
    enableFindRelatedTests: scope !== 'workflows' && scope !== 'events',
  },
  // Each mutant runs only the tests that covered it in the dry run.
  coverageAnalysis: 'perTest',
  // A mutant in module-level code (the preset objects, the failure-type table) is covered while
  // the test files load, outside any test, so it would have to run every selected test: about
  // three minutes each on two cores. They are reported as Ignored, and counted in the summary.
  ignoreStatic: true,
  // Log text and activity summaries are reported as Ignored, with the reason (see the plugin).
  plugins: ['@stryker-mutator/*', './test/support/stryker/ignore-log-text.mjs'],
  ignorers: ['log-text'],
  checkers: ['typescript'],
  tsconfigFile: 'test/support/stryker/tsconfig.json',
  typescriptChecker: { prioritizePerformanceOverAccuracy: true },
  // Two cores: two Stryker workers (each a jest process that starts Temporal test servers) and
  // the type checker; MUTATE_CONCURRENCY=1 on a machine that others share.
  concurrency: Number(process.env.MUTATE_CONCURRENCY ?? 2),
  // Workflow tests start a Temporal test server per test: allow for a loaded machine.
  timeoutMS: 60_000,
  // The first run of every test with coverage: the workflow tests alone take minutes when loaded.
  dryRunTimeoutMinutes: 30,
  timeoutFactor: 2,
  // Re-test only mutants whose code or tests changed since the committed baseline.
  incremental: true,
  incrementalFile: `reports/mutation/${reportName}.incremental.json`,
  reporters: ['clear-text', 'progress-append-only', 'json', 'html'],
  jsonReporter: { fileName: `reports/mutation/${reportName}.json` },
  htmlReporter: { fileName: `reports/mutation/${reportName}.html` },
  clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
  thresholds: { high: 95, low: 90, break: null },
  tempDirName: '.stryker-tmp',
  cleanTempDir: true,
  ignorePatterns: ['data', 'dist', 'coverage', 'reports', 'bench/results', 'deploy'],
};
