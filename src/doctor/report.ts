import { formatTable } from '../operator/table';
import type { CheckResult } from './types';

/** The table, the commands that fix what failed, and a one-line verdict. */
export function formatReport(results: readonly CheckResult[]): string {
  const table = formatTable(
    [
      { header: 'CHECK' },
      { header: 'STATUS' },
      { header: 'DETAIL', maxWidth: 90 },
      { header: 'HINT' },
    ],
    results.map((r) => [r.check, r.status, r.detail, r.hint]),
  );
  const commands = results.flatMap((r) => r.commands ?? []);
  const count = (status: string) => results.filter((r) => r.status === status).length;
  const verdict =
    count('FAIL') > 0
      ? `${count('FAIL')} FAIL, ${count('WARN')} WARN: not ready to take payments.`
      : count('WARN') > 0
        ? `No FAIL, ${count('WARN')} WARN: working; look at the warnings.`
        : 'All checks OK.';
  return [
    table,
    ...(commands.length > 0 ? ['', 'To fix:', ...commands.map((c) => `  ${c}`)] : []),
    '',
    verdict,
  ].join('\n');
}
