import path from 'node:path';
import { Option } from 'commander';
import { createTool, parseTool, wholeNumber } from '../../src/cli/command-line';

/** What every benchmark script accepts on its command line. */
export interface BenchArgs {
  /** A short pass (fewer, shorter rounds) to check that the benchmarks run, not to quote. */
  quick: boolean;
  /** The command a person would type to reproduce this run, recorded in the results file. */
  command: string;
  /** The Temporal server: the CLI dev server (default) or the multi-service cluster. */
  server: 'dev' | 'cluster';
  /** `--rounds N`: measured rounds per variant instead of the benchmark's own number (bench:e2e). */
  rounds?: number;
}

/**
 * The benchmark's command line, `about` saying what it measures in its `--help`. Help and a
 * wrong command line end the process here (0 and 2), before anything is measured.
 */
export async function readBenchArgs(
  about: string,
  argv: readonly string[] = process.argv.slice(2),
): Promise<BenchArgs> {
  const script = process.env.npm_lifecycle_event;
  const name = script ? `npm run ${script} --` : `node --import tsx ${ownFile()}`;
  const tool = createTool(name, about)
    .option('--quick', 'a short pass that shows the benchmark runs; its numbers are not to quote')
    .addOption(
      new Option('--server <server>', 'the Temporal server')
        .choices(['dev', 'cluster'])
        .default('dev'),
    )
    .option(
      '--rounds <n>',
      "measured rounds per variant instead of the benchmark's own (bench:e2e)",
    )
    .addHelpText('after', '\nResults go to bench/results/ (docs/benchmarks.md).');
  const line = await parseTool(
    tool,
    (_args, options) => {
      const quick = options.quick === true;
      const server = options.server as BenchArgs['server'];
      const rounds = wholeNumber('--rounds', options.rounds as string | undefined, 1);
      return {
        quick,
        server,
        rounds,
        command: process.env.BENCH_COMMAND ?? ownCommand(quick, server, rounds),
      };
    },
    argv,
  );
  if (line.kind === 'exit') process.exit(line.code);
  return line.work;
}

/** `npm run bench:intake -- --quick` when started through npm, else the node command line. */
function ownCommand(quick: boolean, server: BenchArgs['server'], rounds?: number): string {
  const flags = [
    ...(quick ? ['--quick'] : []),
    ...(server === 'cluster' ? ['--server', 'cluster'] : []),
    ...(rounds === undefined ? [] : ['--rounds', String(rounds)]),
  ];
  const script = process.env.npm_lifecycle_event;
  if (script) return `npm run ${script}${flags.length ? ` -- ${flags.join(' ')}` : ''}`;
  return `node --import tsx ${ownFile()}${flags.map((f) => ` ${f}`).join('')}`;
}

function ownFile(): string {
  return path.relative(process.cwd(), process.argv[1] ?? 'bench');
}
