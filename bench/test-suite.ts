import { spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { readBenchArgs } from './lib/args';
import { machineFacts, table, writeResults } from './lib/report';
import { fmt, sum } from './lib/stats';

/**
 * (e) Test-suite wall time: `npx jest` once (what `npm test` runs), its total wall time, and each
 * test file's time from jest's JSON report. The quick pass runs only the test files that need no
 * server, to show the script works; the full run is the number to quote.
 */

const ROOT = path.resolve(__dirname, '..');
const QUICK_FILES = [
  'test/shared',
  'test/http/signature.test.ts',
  'test/activities/retry-after.test.ts',
];

interface JestReport {
  success: boolean;
  numTotalTests: number;
  numPassedTests: number;
  numFailedTests: number;
  numPendingTests: number;
  testResults: Array<{
    name: string;
    status: string;
    startTime: number;
    endTime: number;
    assertionResults: unknown[];
  }>;
}

async function main(): Promise<void> {
  const args = await readBenchArgs(
    'The wall time of npx jest (what npm test runs) and of each test file; the quick pass runs only the files that need no server.',
  );
  const startedAt = Date.now();
  const facts = machineFacts();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'order-payments-bench-jest-'));
  try {
    const reportFile = path.join(dir, 'report.json');
    const logFile = path.join(dir, 'jest.log');
    const jestArgs = ['--json', `--outputFile=${reportFile}`, ...(args.quick ? QUICK_FILES : [])];
    log(
      `running jest ${args.quick ? QUICK_FILES.join(' ') : '(every test file)'}; output in ${logFile}`,
    );
    const t0 = performance.now();
    const code = await run(
      path.join(ROOT, 'node_modules', '.bin', 'jest'),
      jestArgs,
      logFile,
      args.quick ? 2 * 60_000 : 10 * 60_000,
    );
    const wallSeconds = (performance.now() - t0) / 1000;
    const report = existsSync(reportFile)
      ? (JSON.parse(readFileSync(reportFile, 'utf8')) as JestReport)
      : undefined;
    if (code !== 0) {
      process.stderr.write(readFileSync(logFile, 'utf8').split('\n').slice(-40).join('\n'));
    }
    // Without a report (jest was stopped), jest's own log still names each finished file and
    // prints the time of those slower than its 5 s threshold.
    const files = report
      ? report.testResults
          .map((r) => ({
            file: path.relative(ROOT, r.name),
            seconds: (r.endTime - r.startTime) / 1000,
            tests: r.assertionResults.length,
            status: r.status,
          }))
          .sort((a, b) => b.seconds - a.seconds)
      : filesFromLog(readFileSync(logFile, 'utf8'));
    const fileSeconds = sum(files.map((f) => f.seconds));
    const out = await writeResults({
      name: 'test-suite',
      title: 'Test-suite wall time',
      args,
      facts,
      startedAt,
      setup: {
        'jest command': `npx jest ${jestArgs.map((a) => (a.startsWith('--outputFile') ? '--outputFile=<tmp>' : a)).join(' ')}`,
        'jest workers': 'maxWorkers 2 (jest.config.js)',
      },
      sections: [
        [
          '## Total',
          '',
          table(
            ['what', 'value'],
            [
              [
                'wall time, jest started to jest exited (global setup with PostgreSQL included)',
                `${fmt(wallSeconds)} s`,
              ],
              ['sum of per-file times (2 files run at once)', `${fmt(fileSeconds)} s`],
              ['test files', files.length],
              [
                'tests passed / failed / skipped',
                report
                  ? `${report.numPassedTests} / ${report.numFailedTests} / ${report.numPendingTests}`
                  : `unknown: jest was stopped after ${fmt(wallSeconds)} s; files finished by then below`,
              ],
              ['jest exit code', code],
            ],
          ),
        ].join('\n'),
        [
          '## Per test file, slowest first',
          '',
          table(
            ['file', 'seconds', 'tests', 'status', 'share of file time'],
            files.map((f) => [
              `\`${f.file}\``,
              fmt(f.seconds),
              f.tests,
              f.status,
              `${fmt((f.seconds / fileSeconds) * 100)} %`,
            ]),
          ),
        ].join('\n'),
      ],
    });
    log(`wrote ${path.relative(process.cwd(), out)}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Runs jest to its end, or kills it after `timeoutMs` (a hung test must not hang the bench). */
function run(command: string, args: string[], logFile: string, timeoutMs: number): Promise<number> {
  const fd = openSync(logFile, 'w');
  return new Promise<number>((resolve, reject) => {
    const child = spawn(command, args, { cwd: ROOT, stdio: ['ignore', fd, fd] });
    const timer = setTimeout(() => {
      log(`jest still running after ${timeoutMs / 1000} s; stopping it`);
      child.kill('SIGTERM');
    }, timeoutMs);
    child.once('error', reject);
    child.once('exit', (code) => {
      clearTimeout(timer);
      resolve(code ?? 1);
    });
  }).finally(() => closeSync(fd));
}

/** Finished files as jest's default reporter printed them ("PASS test/x.test.ts (12.3 s)"). */
function filesFromLog(text: string) {
  return [...text.matchAll(/^(PASS|FAIL) (\S+\.test\.ts)(?: \(([\d.]+) s\))?/gm)]
    .map((m) => ({
      file: m[2]!,
      seconds: m[3] ? Number(m[3]) : 0,
      tests: 'n/a',
      status: m[1] === 'PASS' ? 'passed (time under 5 s not printed)' : 'failed',
    }))
    .sort((a, b) => b.seconds - a.seconds);
}

function log(line: string): void {
  process.stderr.write(`[test-suite] ${line}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
