import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sdkPackage from '@temporalio/worker/package.json';
import * as prettier from 'prettier';
import type { BenchArgs } from './args';

export const RESULTS_DIR = path.resolve(__dirname, '..', 'results');

/** What the machine was doing when the numbers were taken; recorded in every results file. */
export interface MachineFacts {
  date: string;
  nproc: number;
  cpu: string;
  memoryGiB: number;
  node: string;
  os: string;
  temporalSdk: string;
  commit: string;
  loadAverageAtStart: string;
}

export function machineFacts(): MachineFacts {
  return {
    date: new Date().toISOString(),
    nproc: os.availableParallelism(),
    cpu: os.cpus()[0]?.model.trim() ?? 'unknown',
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    node: process.version,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    temporalSdk: sdkPackage.version,
    commit: gitCommit(),
    loadAverageAtStart: loadAverage(),
  };
}

function gitCommit(): string {
  try {
    const run = (args: string[]) =>
      execFileSync('git', args, { cwd: path.resolve(__dirname, '..', '..'), encoding: 'utf8' });
    const head = run(['rev-parse', '--short', 'HEAD']).trim();
    const dirty = run(['status', '--porcelain', '--untracked-files=no']).trim() !== '';
    return dirty ? `${head} + uncommitted changes` : head;
  } catch {
    return 'unknown';
  }
}

/** 1, 5 and 15 minute load averages: other work on the machine shows here. */
export function loadAverage(): string {
  return os
    .loadavg()
    .map((x) => x.toFixed(2))
    .join(', ');
}

export type Cell = string | number;

/** A Markdown table; numbers are right-aligned. */
export function table(headers: readonly string[], rows: readonly (readonly Cell[])[]): string {
  const numeric = headers.map((_, i) => rows.length > 0 && rows.every((r) => isNumberLike(r[i])));
  const line = (cells: readonly Cell[]) => `| ${cells.map(String).join(' | ')} |`;
  return [
    line(headers),
    `|${numeric.map((n) => (n ? ' ---: ' : ' --- ')).join('|')}|`,
    ...rows.map(line),
  ].join('\n');
}

function isNumberLike(cell: Cell | undefined): boolean {
  return (
    typeof cell === 'number' || (typeof cell === 'string' && /^[-\d.,]+\s*(×|%|ms|s)?$/.test(cell))
  );
}

export interface ResultsFile {
  /** File name stem: `intake` writes bench/results/intake.md (intake.quick.md for --quick). */
  name: string;
  title: string;
  args: BenchArgs;
  facts: MachineFacts;
  /** Extra facts for this benchmark (servers, settings), shown under the machine facts. */
  setup: Record<string, string>;
  /** Markdown sections, in order. */
  sections: string[];
  startedAt: number;
}

/**
 * Writes the results file, formatted as the repository's Prettier settings want (the files are
 * committed and `npm run format:check` covers them), and returns its path.
 */
export async function writeResults(results: ResultsFile): Promise<string> {
  const { facts } = results;
  const seconds = ((Date.now() - results.startedAt) / 1000).toFixed(0);
  const factRows: Cell[][] = [
    ['command', `\`${results.args.command}\`${results.args.quick ? ' (quick pass)' : ''}`],
    ['date', facts.date],
    ['nproc', facts.nproc],
    ['CPU', facts.cpu],
    ['memory', `${facts.memoryGiB} GiB`],
    ['node', facts.node],
    ['OS', facts.os],
    ['Temporal TS SDK', facts.temporalSdk],
    ['commit', facts.commit],
    ['load average at start (1, 5, 15 min)', facts.loadAverageAtStart],
    ['load average at end', loadAverage()],
    ['wall time of this benchmark', `${seconds} s`],
    ...Object.entries(results.setup),
  ];
  const text = [
    `# ${results.title}`,
    '',
    results.args.quick
      ? '> Quick pass: fewer and shorter rounds. It shows the benchmark runs; quote the full run.'
      : '> Full run. Method and analysis: docs/benchmarks.md.',
    '',
    table(['fact', 'value'], factRows),
    '',
    ...results.sections.flatMap((s) => [s, '']),
  ].join('\n');
  mkdirSync(RESULTS_DIR, { recursive: true });
  const file = path.join(RESULTS_DIR, `${results.name}${results.args.quick ? '.quick' : ''}.md`);
  const options = (await prettier.resolveConfig(file)) ?? {};
  writeFileSync(file, await prettier.format(text, { ...options, filepath: file }));
  return file;
}
