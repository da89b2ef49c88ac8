import { table, type Cell } from './report';
import { fmt, sum } from './stats';

/**
 * Where a multi-service Temporal server's CPU goes: each of its processes (frontend, history,
 * matching, worker, PostgreSQL), per unit of work, beside the benchmark's own CPU table, whose
 * "Temporal server" column is their sum. Nothing for the dev server (one process).
 */
export function serverProcessSection(input: {
  heading: string;
  /** "flow" or "request". */
  unit: string;
  /** Per unit: 1000 for milliseconds, 1e6 for microseconds. */
  scale: number;
  scaleLabel: string;
  rows: Array<{
    label: string;
    units: number;
    seconds: number;
    cpu: Array<Record<string, number>>;
  }>;
}): string | undefined {
  const names = [
    ...new Set(input.rows.flatMap((r) => r.cpu.flatMap((c) => Object.keys(c)))),
  ].filter((k) => k.startsWith('temporal:'));
  if (names.length === 0) return undefined;
  const rows: Cell[][] = input.rows.map(({ label, units, seconds, cpu }) => {
    const used = (name: string) => sum(cpu.map((c) => c[name] ?? 0));
    const total = sum(names.map(used));
    return [
      label,
      ...names.map((n) => fmt((used(n) / units) * input.scale)),
      fmt((total / units) * input.scale),
      `${fmt((total / seconds) * 100)} %`,
    ];
  });
  return [
    input.heading,
    '',
    `CPU ${input.scaleLabel} per ${input.unit} in each process of the Temporal cluster, from /proc (all threads; PostgreSQL: the postmaster and its backends). Their sum is the "Temporal server" column above.`,
    '',
    table(
      [
        'variant',
        ...names.map((n) => n.slice('temporal:'.length)),
        'cluster total',
        'cluster CPU in use',
      ],
      rows,
    ),
  ].join('\n');
}
