import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createTool, parseTool, UsageError, wholeOption } from '../src/cli/command-line';
import { runMain } from '../src/process/run-main';

/**
 * `npm run test:stress -- [--rounds N] [--hogs N] [file…]`: the test files that start servers,
 * run again and again beside busy cores, and a table of how often each failed and how slow it
 * got. A flaky test is a failing test (docs/testing.md): this is how a developer finds one
 * before CI does, and shows a fix held. CI does not run it.
 */

const ROOT = path.resolve(__dirname, '..');

/**
 * The modules that start a server or a process of their own (Temporal servers, partner doubles,
 * PostgreSQL, the app's processes, `npm start`, Prometheus, Chromium). A test file that reaches one of them through its
 * imports starts a server.
 */
const SERVER_MODULES = [
  'harness/temporal/test-env.ts',
  'harness/temporal/dev-server.ts',
  'harness/partners/index.ts',
  'harness/process/launcher.ts',
  'harness/process/app-processes.ts',
  'harness/process/supervisor.ts',
  'harness/postgres/cluster.ts',
  'harness/prometheus/provision.ts',
  'test/support/dev-stack.ts',
  'test/support/chromium.ts',
].map((file) => path.join(ROOT, file));

interface StressOptions {
  rounds: number;
  hogs: number;
  patterns: string[];
  list: boolean;
}

const commandLine = () =>
  createTool(
    'npm run test:stress --',
    'Runs the test files that start servers (or the files named) round after round beside busy ' +
      'cores, then prints each file with its rounds, failures and slowest time.',
  )
    .argument(
      '[files...]',
      'test files or path fragments, as jest takes them (default: every file that starts a server)',
    )
    .option('--rounds <n>', 'how many times each file runs (default 5)')
    .option('--hogs <n>', 'busy processes beside the tests, each spinning one core (default 1)')
    .option('--list', 'only print the files it would run')
    .addHelpText(
      'after',
      '\nExit codes: 0 every round of every file passed, 1 a round failed, 2 wrong command line.',
    );

function parse(args: string[], options: Record<string, unknown>): StressOptions {
  const rounds = wholeOption(options, '--rounds', 1, 100) ?? 5;
  const hogs = wholeOption(options, '--hogs', 0, 8) ?? 1;
  const option = args.find((a) => a.startsWith('-'));
  if (option) throw new UsageError(`Unknown option "${option}".`);
  return { rounds, hogs, patterns: args, list: options.list === true };
}

/** The test files jest runs (jest.config.js's roots and ignores), as jest itself lists them. */
function testFiles(): string[] {
  const jest = path.join(ROOT, 'node_modules', '.bin', 'jest');
  const listed = execFileSync(jest, ['--listTests', '--json'], { cwd: ROOT, encoding: 'utf8' });
  return (JSON.parse(listed) as string[]).sort();
}

const IMPORT = /(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g;

/** Whether `file` reaches a server module through its relative imports (src/ never starts one). */
function startsServer(file: string, seen = new Set<string>()): boolean {
  if (SERVER_MODULES.includes(file)) return true;
  if (seen.has(file) || file.startsWith(path.join(ROOT, 'src'))) return false;
  seen.add(file);
  const text = readFileSync(file, 'utf8');
  for (const [, spec] of text.matchAll(IMPORT)) {
    const base = path.resolve(path.dirname(file), spec!);
    const target = [base, `${base}.ts`, path.join(base, 'index.ts')].find(
      (candidate) => candidate.endsWith('.ts') && existsSync(candidate),
    );
    if (target && startsServer(target, seen)) return true;
  }
  return false;
}

/** The jest of the round in progress: stopped with this process (Ctrl-C), its servers with it. */
let running: ChildProcess | undefined;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    running?.kill('SIGTERM');
    process.exit(130);
  });
}

interface FileRound {
  passed: boolean;
  seconds: number;
}

interface JestReport {
  testResults: Array<{ name: string; status: string; startTime: number; endTime: number }>;
}

/** One jest run over the files; each file's outcome, read from jest's JSON report. */
async function runRound(
  files: string[],
  dir: string,
  round: number,
): Promise<Map<string, FileRound>> {
  const report = path.join(dir, `round-${round}.json`);
  const jest = path.join(ROOT, 'node_modules', '.bin', 'jest');
  const child = spawn(jest, ['--json', `--outputFile=${report}`, ...files], {
    cwd: ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  running = child;
  let tail = '';
  child.stderr.on('data', (chunk: Buffer) => {
    tail = (tail + chunk.toString()).slice(-20_000);
  });
  const code = await new Promise<number | null>((resolve) => child.once('close', resolve));
  const outcome = new Map<string, FileRound>();
  if (existsSync(report)) {
    const parsed = JSON.parse(readFileSync(report, 'utf8')) as JestReport;
    for (const result of parsed.testResults) {
      outcome.set(path.relative(ROOT, result.name), {
        passed: result.status === 'passed',
        seconds: (result.endTime - result.startTime) / 1000,
      });
    }
  }
  // A file jest never reported (a crash of its worker) failed this round.
  for (const file of files) {
    const relative = path.relative(ROOT, file);
    if (!outcome.has(relative)) outcome.set(relative, { passed: false, seconds: 0 });
  }
  if (code !== 0) {
    const failed = [...outcome].filter(([, r]) => !r.passed).map(([f]) => f);
    process.stderr.write(
      `round ${round}: jest exited ${code}; failed: ${failed.join(', ') || '(none reported)'}\n` +
        `${tail.split('\n').slice(-60).join('\n')}\n`,
    );
  }
  return outcome;
}

/**
 * Each spins one core, and looks once a second whether this process still lives: killed
 * however this one is, it leaves no busy process behind.
 */
const HOG = `for (let next = 0; ; ) {
  if (Date.now() >= next) {
    next = Date.now() + 1000;
    try { process.kill(${process.pid}, 0); } catch { process.exit(0); }
  }
}`;

function startHogs(count: number): ChildProcess[] {
  return Array.from({ length: count }, () =>
    spawn(process.execPath, ['-e', HOG], { stdio: 'ignore' }),
  );
}

function printTable(results: Map<string, FileRound[]>): void {
  const rows = [...results].map(([file, rounds]) => [
    file,
    String(rounds.length),
    String(rounds.filter((r) => !r.passed).length),
    Math.max(...rounds.map((r) => r.seconds)).toFixed(1),
  ]);
  const header = ['file', 'rounds', 'failures', 'slowest s'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  console.log(line(header));
  console.log(
    `| ${widths.map((w, i) => (i === 0 ? '-'.repeat(w) : `${'-'.repeat(w - 1)}:`)).join(' | ')} |`,
  );
  for (const row of rows) console.log(line(row));
}

async function main(): Promise<number> {
  const line = await parseTool(commandLine(), parse);
  if (line.kind === 'exit') return line.code;
  const { rounds, hogs, patterns, list } = line.work;
  const all = testFiles();
  const files =
    patterns.length === 0
      ? all.filter((file) => startsServer(file))
      : all.filter((file) =>
          patterns.some((p) => path.relative(ROOT, file).includes(p.replace(/^\.\//, ''))),
        );
  if (files.length === 0) {
    console.error(`No test file matches ${patterns.join(' ')}.`);
    return 2;
  }
  if (list) {
    for (const file of files) console.log(path.relative(ROOT, file));
    return 0;
  }
  console.log(
    `${files.length} file(s), ${rounds} round(s), beside ${hogs} busy process(es) on ${os.cpus().length} cores`,
  );
  const dir = mkdtempSync(path.join(os.tmpdir(), 'order-payments-stress-'));
  const busy = startHogs(hogs);
  const stopHogs = () => busy.forEach((hog) => hog.kill('SIGKILL'));
  process.once('exit', stopHogs);
  const results = new Map<string, FileRound[]>(files.map((f) => [path.relative(ROOT, f), []]));
  try {
    for (let round = 1; round <= rounds; round++) {
      const started = Date.now();
      const outcome = await runRound(files, dir, round);
      for (const [file, result] of outcome) results.get(file)?.push(result);
      const failed = [...outcome.values()].filter((r) => !r.passed).length;
      console.log(
        `round ${round}/${rounds}: ${failed === 0 ? 'passed' : `${failed} file(s) failed`} in ${Math.round((Date.now() - started) / 1000)} s`,
      );
    }
  } finally {
    stopHogs();
    rmSync(dir, { recursive: true, force: true });
  }
  printTable(results);
  return [...results.values()].some((r) => r.some((x) => !x.passed)) ? 1 : 0;
}

runMain(main);
