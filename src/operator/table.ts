export interface Column {
  header: string;
  /** Longer cells are cut and end in "…". Default: no limit. */
  maxWidth?: number;
}

/** Aligned like `kubectl get`: readable in a terminal, easy to grep; line breaks become spaces. */
export function formatTable(
  columns: readonly Column[],
  rows: readonly (readonly string[])[],
): string {
  const cells = [
    columns.map((c) => c.header),
    ...rows.map((row) => columns.map((c, i) => fit(row[i] ?? '', c.maxWidth))),
  ];
  const widths = columns.map((_, i) => Math.max(...cells.map((r) => width(r[i] ?? ''))));
  return cells
    .map((row) =>
      row
        .map((cell, i) => (i === row.length - 1 ? cell : pad(cell, widths[i] ?? 0)))
        .join('  ')
        .trimEnd(),
    )
    .join('\n');
}

function fit(value: string, maxWidth: number | undefined): string {
  const oneLine = value.replace(/\s*[\r\n]+\s*/g, ' ');
  if (maxWidth === undefined || width(oneLine) <= maxWidth) return oneLine;
  return `${[...oneLine].slice(0, Math.max(0, maxWidth - 1)).join('')}…`;
}

// Counted in code points, so "…" and non-Latin text take one column each (close enough for
// the IDs, types and messages shown here).
function width(value: string): number {
  return [...value].length;
}

function pad(value: string, to: number): string {
  return value + ' '.repeat(Math.max(0, to - width(value)));
}
