#!/usr/bin/env node
// @ts-check
// `npm run mutate [-- <stryker options>]`: runs StrykerJS on every scope of stryker.config.mjs
// in turn (or on those named in MUTATE_SCOPE, comma-separated), each against its own committed
// baseline, then writes the score per module to reports/mutation/summary.md with the wall time
// of each run. Exits non-zero when a run fails, or, with MUTATION_FLOOR=N, when a module of the
// scopes it ran scores under N % (the summary still covers every scope).
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { scopes } from './scopes.cjs';

const ALL = Object.keys(scopes);
const chosen = (process.env.MUTATE_SCOPE ?? ALL.join(',')).split(',').filter(Boolean);
const unknown = chosen.filter((s) => !ALL.includes(s));
if (unknown.length > 0) {
  console.error(`MUTATE_SCOPE: unknown scope ${unknown.join(', ')} (use ${ALL.join(', ')})`);
  process.exit(2);
}

const args = process.argv.slice(2);
// A run over part of a scope (--mutate file:lines) reports only that part: it reads the baseline
// but writes its results to a copy, so the committed baseline keeps the whole scope.
const partial = args.some((a) => a === '--mutate' || a.startsWith('--mutate=') || a === '-m');
const scratch = partial ? mkdtempSync(path.join(os.tmpdir(), 'mutate-')) : undefined;

const notes = [];
for (const scope of chosen) {
  const started = Date.now();
  const baseline = `reports/mutation/mutation-${scope}.incremental.json`;
  let incremental = [];
  if (scratch) {
    const copy = path.join(scratch, path.basename(baseline));
    if (existsSync(baseline)) copyFileSync(baseline, copy);
    incremental = ['--incrementalFile', copy];
    console.error(`partial run: results of ${scope} go to ${copy}, not to ${baseline}`);
  }
  const run = spawnSync('npx', ['stryker', 'run', ...args, ...incremental], {
    stdio: 'inherit',
    env: { ...process.env, MUTATE_SCOPE: scope },
  });
  const seconds = Math.round((Date.now() - started) / 1000);
  notes.push(`\`${scope}\`: ${Math.floor(seconds / 60)} min ${seconds % 60} s`);
  if (run.status !== 0) {
    console.error(`stryker failed on scope ${scope} (exit ${run.status ?? run.signal})`);
    process.exit(1);
  }
  if (!scratch) keepOnly(baseline, scopes[scope]);
}

/**
 * Stryker carries over every file of the baseline it read, mutated this time or not; a module
 * that left the scope would linger in it with stale results. The baseline keeps the scope's own.
 */
function keepOnly(file, modules) {
  const report = JSON.parse(readFileSync(file, 'utf8'));
  const stale = Object.keys(report.files).filter((f) => !modules.includes(f));
  if (stale.length === 0) return;
  for (const f of stale) delete report.files[f];
  writeFileSync(file, JSON.stringify(report, null, 2));
}

if (partial) process.exit(0);

// Every scope's baseline is the whole report of its last run, so the summary covers all scopes,
// whichever ran now.
const baselines = ALL.map((s) => `reports/mutation/mutation-${s}.incremental.json`).filter((f) =>
  existsSync(f),
);
const [load1] = os.loadavg();
const note =
  `Last \`npm run mutate\` (MUTATE_SCOPE=${chosen.join(',')}) on ${os.cpus().length} cores, ` +
  `load ${load1.toFixed(1)} at the end: ${notes.join('; ')} wall time.`;
const summary = (reports, extra) =>
  spawnSync(process.execPath, ['test/support/stryker/summary.mjs', ...extra, ...reports], {
    stdio: 'inherit',
  }).status ?? 1;
// The summary covers every scope; the floor, the scopes that ran.
const written = summary(baselines, ['--out', 'reports/mutation/summary.md', '--note', note]);
if (written !== 0 || !process.env.MUTATION_FLOOR) process.exit(written);
const ran = chosen.map((s) => `reports/mutation/mutation-${s}.incremental.json`);
process.exit(summary(ran, ['--floor', process.env.MUTATION_FLOOR, '--out', os.devNull]));
