import { spawn } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import prettier from 'prettier';
import { readBenchArgs } from './lib/args';
import { workflowBundlePath } from './lib/bundles';
import { loadAverage, RESULTS_DIR } from './lib/report';

/**
 * `npm run bench:cluster [-- --quick]`: the intake and end-to-end benchmarks on the dev server,
 * then on the multi-service cluster, one after the other on the same machine, and one file
 * (bench/results/dev-vs-cluster.md) that puts their throughput, latency and per-process CPU side
 * by side. Each run also writes its own full results file.
 */

const BENCHMARKS = ['end-to-end', 'intake'] as const;
const SERVERS = ['dev', 'cluster'] as const;
// The sections of each results file worth putting side by side.
const KEPT_SECTIONS = /^## (Concurrency|Where the CPU goes|Temporal cluster processes)/;

async function main(): Promise<void> {
  const args = await readBenchArgs(
    'The intake and end-to-end benchmarks on the dev server, then on the multi-service cluster, side by side in bench/results/dev-vs-cluster.md.',
  );
  const started = performance.now();
  const loadAtStart = loadAverage();
  await workflowBundlePath('payments');
  await workflowBundlePath('bench');
  const parts: string[] = [];
  for (const name of BENCHMARKS) {
    for (const server of SERVERS) {
      const t0 = performance.now();
      log(`${name} on the ${server} server: starting`);
      const code = await run(name, server, args.quick);
      const seconds = Math.round((performance.now() - t0) / 1000);
      if (code !== 0) throw new Error(`${name} on the ${server} server failed (exit ${code})`);
      log(`${name} on the ${server} server: ${seconds} s`);
      const file = path.join(
        RESULTS_DIR,
        `${name}${server === 'cluster' ? '-cluster' : ''}${args.quick ? '.quick' : ''}.md`,
      );
      parts.push(
        `## ${name}, ${server === 'dev' ? 'dev server (one process)' : 'multi-service cluster'}`,
        '',
        `From [${path.basename(file)}](${path.basename(file)}) (${seconds} s).`,
        '',
        ...keptSections(readFileSync(file, 'utf8')),
      );
    }
  }
  const text = [
    '# Dev server vs multi-service cluster, same machine, one run',
    '',
    args.quick
      ? '> Quick pass: fewer and shorter rounds. It shows the comparison runs; quote the full run.'
      : '> Full run. Analysis: docs/benchmarks.md.',
    '',
    `Command \`npm run bench:cluster${args.quick ? ' -- --quick' : ''}\`, ${os.availableParallelism()} cores, load average ${loadAtStart} at start and ${loadAverage()} at the end, ${Math.round((performance.now() - started) / 1000)} s in all. The dev server is the Temporal CLI's (SQLite in memory, one process); the cluster is \`npm run cluster\`'s (frontend, history, matching, worker, PostgreSQL 15, 4 shards, mTLS). The "Temporal server" CPU column of the cluster is the sum of its processes, PostgreSQL included, as the dev server's includes its SQLite.`,
    '',
    ...parts,
  ].join('\n');
  const file = path.join(RESULTS_DIR, `dev-vs-cluster${args.quick ? '.quick' : ''}.md`);
  const options = (await prettier.resolveConfig(file)) ?? {};
  writeFileSync(file, await prettier.format(text, { ...options, filepath: file }));
  log(`wrote ${path.relative(process.cwd(), file)}`);
}

/** The kept `## ` sections of a results file, whole, one level down (under the run's `##`). */
function keptSections(markdown: string): string[] {
  return markdown
    .split(/\n(?=## )/)
    .filter((section) => KEPT_SECTIONS.test(section))
    .flatMap((section) => [`#${section.trim()}`, '']);
}

function run(name: string, server: string, quick: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(__dirname, `${name}.ts`),
        ...(quick ? ['--quick'] : []),
        '--server',
        server,
      ],
      { stdio: 'inherit' },
    );
    child.once('error', reject);
    child.once('exit', (code) => resolve(code ?? 1));
  });
}

function log(line: string): void {
  process.stderr.write(`[bench:cluster] ${line}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? error.stack : String(error)}\n`);
  process.exit(1);
});
