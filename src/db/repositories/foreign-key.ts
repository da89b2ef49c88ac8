/** What `unlessMissingReference` answers for a write that a foreign key refused. */
export const MISSING_REFERENCE = Symbol('missing reference');

/**
 * The write's result, or MISSING_REFERENCE when it named a row that does not exist (an order):
 * the foreign key tells, not a read before the write, which would race with the row's insert.
 * Any other failure is thrown.
 */
export async function unlessMissingReference<T>(
  write: () => Promise<T>,
): Promise<T | typeof MISSING_REFERENCE> {
  try {
    return await write();
  } catch (error) {
    if (isForeignKeyViolation(error)) return MISSING_REFERENCE;
    throw error;
  }
}

/** PostgreSQL's SQLSTATE 23503, or better-sqlite3's extended result code. */
function isForeignKeyViolation(error: unknown): boolean {
  if (typeof error !== 'object' || error === null || !('code' in error)) return false;
  return error.code === '23503' || error.code === 'SQLITE_CONSTRAINT_FOREIGNKEY';
}
