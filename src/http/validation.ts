import type { z } from 'zod';

/**
 * A short, client-facing summary of what failed validation: each field once, with its first
 * problem, for the first few fields. Several checks can fail on one value (zod's int() and
 * max() both refuse 2^53), and naming the same field twice only reads as two problems.
 */
export function formatIssues(error: z.ZodError): string {
  const firstByPath = new Map<string, string>();
  for (const issue of error.issues) {
    const path = issue.path.map(String).join('.');
    if (firstByPath.has(path)) continue;
    firstByPath.set(path, path.length > 0 ? `${path}: ${issue.message}` : issue.message);
  }
  return [...firstByPath.values()].slice(0, 5).join('; ');
}
