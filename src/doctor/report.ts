import { formatTable } from '../operator/table';
import type { CheckResult, CheckStatus } from './types';

/** Wider details are cut in the table, one line per check, and printed whole below it. */
const DETAIL_WIDTH = 90;

/** The table, every detail too long for it in full, the commands that fix what failed, a verdict. */
export function formatReport(results: readonly CheckResult[]): string {
  const table = formatTable(
    [
      { header: 'CHECK' },
      { header: 'STATUS' },
      { header: 'DETAIL', maxWidth: DETAIL_WIDTH },
      { header: 'HINT' },
    ],
    results.map((r) => [r.check, r.status, r.detail, r.hint]),
  );
  const long = results.filter((r) => [...r.detail].length > DETAIL_WIDTH);
  const commands = results.flatMap((r) => r.commands ?? []);
  const count = (status: CheckStatus) => results.filter((r) => r.status === status).length;
  const unknown = count('UNKNOWN');
  const alsoUnknown = unknown > 0 ? `, ${unknown} UNKNOWN` : '';
  // A FAIL was seen, so it wins; an UNKNOWN saw nothing, so it is never "working" nor "OK".
  const verdict =
    count('FAIL') > 0
      ? `${count('FAIL')} FAIL, ${count('WARN')} WARN${alsoUnknown}: not ready to take payments.`
      : unknown > 0
        ? `No FAIL, ${count('WARN')} WARN, ${unknown} UNKNOWN: could not tell, as a call got no answer in time; run the doctor again.`
        : count('WARN') > 0
          ? `No FAIL, ${count('WARN')} WARN: working; look at the warnings.`
          : 'All checks OK.';
  return [
    table,
    ...(long.length > 0
      ? ['', 'In full:', ...long.map((r) => `  ${r.check} (${r.status}): ${r.detail}`)]
      : []),
    ...(commands.length > 0 ? ['', 'To fix:', ...commands.map((c) => `  ${c}`)] : []),
    '',
    verdict,
  ].join('\n');
}
