/** OK: nothing to do. WARN: works, but look. FAIL: broken; the doctor exits 1. SKIP: not checked. */
export type CheckStatus = 'OK' | 'WARN' | 'FAIL' | 'SKIP';

export interface CheckResult {
  check: string;
  status: CheckStatus;
  detail: string;
  /** What to do about it; `-` when nothing. */
  hint: string;
  /** Commands that fix it, printed in full under the table. */
  commands?: string[];
}

export function result(
  check: string,
  status: CheckStatus,
  detail: string,
  hint = '-',
  commands?: string[],
): CheckResult {
  return commands ? { check, status, detail, hint, commands } : { check, status, detail, hint };
}
