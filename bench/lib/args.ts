import path from 'node:path';

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
  const rest = [...argv];
  let server: BenchArgs['server'] = 'dev';
  const at = rest.indexOf('--server');
  if (at >= 0) {
    const value = rest[at + 1];
    if (value !== 'dev' && value !== 'cluster') {
      throw new Error(`--server takes dev or cluster, not ${value ?? 'nothing'}`);
    }
    server = value;
    rest.splice(at, 2);
  }
  let rounds: number | undefined;
  const roundsAt = rest.indexOf('--rounds');
  if (roundsAt >= 0) {
    rounds = Number(rest[roundsAt + 1]);
    if (!Number.isInteger(rounds) || rounds < 1) {
      throw new Error(`--rounds takes a whole number ≥ 1, not ${rest[roundsAt + 1] ?? 'nothing'}`);
    }
    rest.splice(roundsAt, 2);
  }
  const unknown = rest.filter((a) => a !== '--quick');
  if (unknown.length > 0) {
    throw new Error(
      `unknown argument(s): ${unknown.join(' ')} (options: --quick, --server dev|cluster, --rounds N)`,
    );
  }
  const quick = rest.includes('--quick');
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
