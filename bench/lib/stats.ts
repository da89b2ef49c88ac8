/** Small, dependency-free statistics for benchmark samples. */

/** The p-th percentile (0-100) by linear interpolation between closest ranks; NaN when empty. */
export function percentile(samples: readonly number[], p: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = (p / 100) * (sorted.length - 1);
  const low = Math.floor(rank);
  const high = Math.ceil(rank);
  const lowValue = sorted[low]!;
  return lowValue + (sorted[high]! - lowValue) * (rank - low);
}

export function median(samples: readonly number[]): number {
  return percentile(samples, 50);
}

export function mean(samples: readonly number[]): number {
  if (samples.length === 0) return Number.NaN;
  return samples.reduce((sum, x) => sum + x, 0) / samples.length;
}

export function sum(samples: readonly number[]): number {
  return samples.reduce((total, x) => total + x, 0);
}

/** Rounds for display: 3 significant digits below 100, integers above. */
export function fmt(value: number, digits = 3): string {
  if (!Number.isFinite(value)) return 'n/a';
  if (Math.abs(value) >= 100) return Math.round(value).toLocaleString('en-US');
  return Number(value.toPrecision(digits)).toString();
}

/** A ratio as "0.93×". */
export function fmtRatio(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(2)}×` : 'n/a';
}

export function fmtPercent(value: number): string {
  return Number.isFinite(value) ? `${(value * 100).toFixed(1)} %` : 'n/a';
}
