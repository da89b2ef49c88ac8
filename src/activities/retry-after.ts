/**
 * Parses an HTTP `Retry-After` value (delay in seconds, or an HTTP date) into milliseconds from
 * `now`. Returns undefined when the header is absent or unreadable, so the caller falls back to
 * its own backoff instead of trusting garbage. Past dates mean "now" (0 ms).
 */
export function parseRetryAfterMs(
  value: string | null | undefined,
  now = Date.now(),
): number | undefined {
  if (value === null || value === undefined) return undefined;
  const trimmed = value.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  // Only accept things that look like a date, so "soon" or "-5" are not read as a time.
  if (!/[A-Za-z]/.test(trimmed)) return undefined;
  const at = Date.parse(trimmed);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - now);
}
