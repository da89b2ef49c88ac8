import type { z } from 'zod';

/** A short, client-facing summary of what failed validation (first few issues, with paths). */
export function formatIssues(error: z.ZodError): string {
  return error.issues
    .slice(0, 5)
    .map((i) => (i.path.length > 0 ? `${i.path.join('.')}: ${i.message}` : i.message))
    .join('; ');
}
