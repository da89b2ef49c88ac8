/** A duration as the chaos and crash-point logs print it: `12.3 s`. */
export function seconds(ms: number | undefined): string {
  return `${((ms ?? 0) / 1000).toFixed(1)} s`;
}
