/**
 * A customer's e-mail address as logs and alerts may show it: enough for a person to tell
 * which customer (`j***@example.com`), not enough to write to them or to join it with other
 * data. Anything that is not an address becomes `***`. Pure, so workflows may use it too.
 */
export function maskEmail(value: unknown): string {
  if (typeof value !== 'string') return '***';
  const at = value.lastIndexOf('@');
  if (at < 1 || at === value.length - 1) return '***';
  return `${value[0]}***${value.slice(at)}`;
}
