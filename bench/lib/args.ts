import path from 'node:path';
import { parseArgs as parseCommandLine } from 'node:util';

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

export function parseArgs(argv: readonly string[] = process.argv.slice(2)): BenchArgs {
  let values;
  try {
    ({ values } = parseCommandLine({
      args: [...argv],
      options: {
        quick: { type: 'boolean', default: false },
        server: { type: 'string', default: 'dev' },
        rounds: { type: 'string' },
      },
    }));
  } catch (error) {
    throw new Error(
      `${(error as Error).message} (options: --quick, --server dev|cluster, --rounds N)`,
    );
  }
  const { quick, server } = values;
  if (server !== 'dev' && server !== 'cluster') {
    throw new Error(`--server takes dev or cluster, not ${server}`);
  }
  let rounds: number | undefined;
  if (values.rounds !== undefined) {
    rounds = Number(values.rounds);
    if (!Number.isInteger(rounds) || rounds < 1) {
      throw new Error(`--rounds takes a whole number ≥ 1, not ${values.rounds}`);
    }
  }
  return {
    quick,
    server,
    rounds,
    command: process.env.BENCH_COMMAND ?? ownCommand(quick, server, rounds),
  };
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
  const file = path.relative(process.cwd(), process.argv[1] ?? 'bench');
  return `node --import tsx ${file}${flags.map((f) => ` ${f}`).join('')}`;
}
