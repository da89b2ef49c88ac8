import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { readBenchArgs } from './lib/args';
import { workflowBundlePath } from './lib/bundles';
import { loadAverage } from './lib/report';

/**
 * `npm run bench` (add `-- --quick` for the short pass): every benchmark, one after another, each
 * in a process of its own so none inherits another's heap, JIT state or leftovers. Each writes
 * its results to bench/results/<name>[.quick].md.
 */

const BENCHMARKS = [
  'intake',
  'end-to-end',
  'flow-cost',
  'duplicate-storm',
  'worker-memory',
  'test-suite',
];

async function main(): Promise<void> {
  const args = await readBenchArgs(
    'Every benchmark, one after another, each in a process of its own; each writes bench/results/<name>[.quick].md.',
  );
  const command = `npm run bench${args.quick ? ' -- --quick' : ''}`;
  const started = performance.now();
  log(
    `${os.availableParallelism()} cores, load average ${loadAverage()} (other work on the machine skews the numbers)`,
  );
  // Built once here, so no benchmark spends its first seconds in webpack.
  await workflowBundlePath('payments');
  await workflowBundlePath('bench');

  const failed: string[] = [];
  for (const name of BENCHMARKS) {
    const t0 = performance.now();
    log(`${name}: starting`);
    const code = await runBenchmark(name, args.quick, command);
    log(
      `${name}: ${code === 0 ? 'done' : `FAILED (exit ${code})`} in ${Math.round((performance.now() - t0) / 1000)} s`,
    );
    if (code !== 0) failed.push(name);
  }
  log(`all benchmarks: ${Math.round((performance.now() - started) / 1000)} s`);
  if (failed.length > 0) {
    log(`failed: ${failed.join(', ')}`);
    process.exitCode = 1;
  }
}

function runBenchmark(name: string, quick: boolean, command: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      ['--import', 'tsx', path.join(__dirname, `${name}.ts`), ...(quick ? ['--quick'] : [])],
      { stdio: 'inherit', env: { ...process.env, BENCH_COMMAND: command } },
    );
    child.once('error', reject);
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

function log(line: string): void {
  process.stderr.write(`[bench] ${line}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
