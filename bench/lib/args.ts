import path from 'node:path';

/** What every benchmark script accepts on its command line. */
export interface BenchArgs {
  /** A short pass (fewer, shorter rounds) to check that the benchmarks run, not to quote. */
  quick: boolean;
  /** The command a person would type to reproduce this run, recorded in the results file. */
  command: string;
}

export function parseArgs(argv: readonly string[] = process.argv.slice(2)): BenchArgs {
  const unknown = argv.filter((a) => a !== '--quick');
  if (unknown.length > 0) {
    throw new Error(`unknown argument(s): ${unknown.join(' ')} (the only option is --quick)`);
  }
  const quick = argv.includes('--quick');
  return { quick, command: process.env.BENCH_COMMAND ?? ownCommand(quick) };
}

/** `npm run bench:intake -- --quick` when started through npm, else the node command line. */
function ownCommand(quick: boolean): string {
  const script = process.env.npm_lifecycle_event;
  const flag = quick ? ' -- --quick' : '';
  if (script) return `npm run ${script}${flag}`;
  const file = path.relative(process.cwd(), process.argv[1] ?? 'bench');
  return `node --import tsx ${file}${quick ? ' --quick' : ''}`;
}
