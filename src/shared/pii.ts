/** `j***@example.com`: tells a person which customer, not enough to write or join. Pure. */
export function maskEmail(value: unknown): string {
  if (typeof value !== 'string') return '***';
  const at = value.lastIndexOf('@');
  if (at < 1 || at === value.length - 1) return '***';
  return `${value[0]}***${value.slice(at)}`;
}
