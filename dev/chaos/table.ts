import type { ChaosReport } from './chaos-report';
import { seconds } from './seconds';

/** The summary of a run: one table, then the failures and the notable details, if any. */
export function renderReport(report: ChaosReport): string {
  const v = report.verdict;
  const t = v?.totals;
  const kills = (kind: string) => report.kills.filter((k) => k.kind === kind).length;
  const d = report.deliveries;
  const lost = v?.failures.filter((f) => f.kind === 'lost' || f.kind === 'incomplete').length;
  const doubled = v?.failures.filter((f) => f.kind === 'doubled' || f.kind === 'wrong-key').length;
  const na = (value: number | string | undefined) => (value === undefined ? 'n/a' : String(value));
  const commitHits = report.commitWindow.filter((c) => c.hit).length;
  const status = t?.workflowsByStatus ?? {};
  const completed = t?.completedByType ?? {};

  const rows: Array<[string, string] | 'rule'> = [
    ['events (distinct payment events)', String(report.events)],
    ['orders (paid twice)', `${report.orders} (${report.doubleChargedOrders})`],
    'rule',
    ['worker SIGKILLs: random moment', String(kills('random'))],
    [
      'worker SIGKILLs: after payment commit',
      `${kills('payment-commit')} (window hit ${commitHits}, verified in history)`,
    ],
    ['worker SIGKILLs: after warehouse 201', String(kills('warehouse-201'))],
    ['worker SIGKILLs: after SMTP accept, before stamp', String(kills('mail-stamp'))],
    [
      'worker processes (payments + heavy), (re)starts',
      `${report.options.workers} + ${report.heavyWorkers}, ${report.workerStarts}`,
    ],
    [
      'Temporal server SIGKILL + restart',
      `${report.serverRestarts.length}${report.serverRestarts.length ? ` (back after ${report.serverRestarts.map((r) => seconds(r.readyAfterMs)).join(', ')})` : ''}`,
    ],
    [
      'PostgreSQL outages (stop -m immediate)',
      `${report.dbOutages.length}${report.dbOutages.length ? ` (${report.dbOutages.map((o) => seconds(o.downMs)).join(', ')})` : ''}`,
    ],
    ['unexpected process exits', String(report.unexpectedExits.length)],
    'rule',
    ['webhook deliveries (concurrent copies)', `${d.deliveries} (${d.concurrentCopies})`],
    ['webhook requests incl. retries', String(d.requests)],
    [
      '  answered 200 / 503 / connection error',
      `${d.accepted} / ${d.status503} / ${d.connectionErrors}`,
    ],
    ['  other answers / abandoned', `${d.unexpected.length} / ${d.abandoned}`],
    'rule',
    [
      'workflows completed (payment/order/invoice/alert)',
      `${completed.paymentWorkflow ?? 0} / ${completed.orderWorkflow ?? 0} / ${completed.invoiceWorkflow ?? 0} / ${completed.alertWorkflow ?? 0}`,
    ],
    [
      'workflows not completed',
      String(Object.entries(status).reduce((n, [s, c]) => (s === 'COMPLETED' ? n : n + c), 0)),
    ],
    ['recordPayment retried (any cause)', String(report.recordPaymentRetried)],
    ['payment commits never reported (created=false)', String(report.unreportedCommits.length)],
    ['payments (rows)', na(t?.paymentRows)],
    ['shipments created', na(t?.shipments)],
    [
      'warehouse requests (idempotent replays)',
      t ? `${t.warehouseRequests} (${t.warehouseReplays})` : 'n/a',
    ],
    [
      'mails received (distinct Message-IDs)',
      t ? `${t.mailsReceived} (${t.distinctMessageIds})` : 'n/a',
    ],
    ['duplicate mail (same Message-ID, deduplicable)', na(v?.duplicateMails.length)],
    ['loyalty ledger rows (points)', t ? `${t.ledgerRows} (${t.pointsAwarded})` : 'n/a'],
    [
      'invoices written (stray .tmp files)',
      t?.invoices === undefined ? 'n/a' : `${t.invoices} (${report.strayTempFiles})`,
    ],
    'rule',
    ['LOST', na(lost)],
    ['DOUBLED', na(doubled)],
    ['duration', `${seconds(report.durationMs)} (convergence ${seconds(report.convergenceMs)})`],
    ['result', report.error ? 'ERROR' : passed(report) ? 'PASS' : 'FAIL'],
  ];

  const width = Math.max(...rows.map((r) => (r === 'rule' ? 0 : r[0].length)));
  const valueWidth = Math.max(...rows.map((r) => (r === 'rule' ? 0 : r[1].length)));
  const rule = `+${'-'.repeat(width + 2)}+${'-'.repeat(valueWidth + 2)}+`;
  const lines = [rule];
  for (const row of rows) {
    lines.push(
      row === 'rule' ? rule : `| ${row[0].padEnd(width)} | ${row[1].padEnd(valueWidth)} |`,
    );
  }
  lines.push(rule);
  lines.push(`seed ${report.options.seed}; logs in ${report.runDir}/logs`);

  if (report.commitWindow.length > 0) {
    lines.push('', 'Kills right after a payment row committed:');
    for (const c of report.commitWindow) {
      lines.push(
        `  event ${c.eventId} (order ${na(c.orderId)}): killed in attempt ${na(c.killedAttempt)}, ` +
          `completed in attempt ${na(c.completedAttempt)} -> ${c.hit ? 'window hit' : 'window missed'}; ` +
          `workflow result created=${na(String(c.created))}; order ${c.shipped ? 'shipped' : 'NOT shipped'}`,
      );
    }
  }
  if (report.recordPaymentRetried > 0) {
    lines.push('', 'recordPayment retries by cause (last failure kept in the history):');
    for (const [cause, n] of Object.entries(report.recordPaymentRetryCauses)) {
      lines.push(`  ${String(n).padStart(4)}  ${cause}`);
    }
  }
  if (report.unreportedCommits.length > 0) {
    lines.push(
      '',
      'Payment rows committed by an attempt that never reported (retry saw created=false):',
    );
    for (const u of report.unreportedCommits) {
      lines.push(
        `  event ${u.eventId} (order ${u.orderId}) committed at +${na(u.committedAtS)} s; ` +
          `completed in attempt ${na(u.completedAttempt)}; likely cause: ${u.cause ?? 'unknown'}`,
      );
    }
  }
  if (v && v.duplicateMails.length > 0) {
    lines.push('', 'Duplicate mail (same Message-ID, deduplicable):');
    for (const m of v.duplicateMails) {
      lines.push(
        `  order ${m.orderId}: ${m.copies} copies of ${m.messageId}; ${m.explainedBy ? `after ${m.explainedBy}` : 'NO crash or outage in between'}`,
      );
    }
  }
  if (report.unexpectedExits.length > 0) {
    lines.push('', 'Unexpected exits (restarted by the supervisor):');
    for (const e of report.unexpectedExits) {
      lines.push(
        `  ${e.process} at +${e.atS} s: ${e.signal ?? `exit code ${e.code}`}${e.reason ? ` (${e.reason})` : ''}`,
      );
    }
  }
  const notes = [
    ...report.skipped,
    ...Object.entries(report.armedNotTriggered)
      .filter(([, n]) => n > 0)
      .map(([point, n]) => `${point}: armed ${n} time(s) but never reached`),
    ...(report.holdsReleased > 0
      ? [`${report.holdsReleased} armed moment(s) passed without a SIGKILL`]
      : []),
    ...(report.converged || report.error
      ? []
      : ['workflows still running at the convergence deadline']),
  ];
  if (notes.length > 0) lines.push('', 'Notes:', ...notes.map((n) => `  ${n}`));
  if (d.unexpected.length > 0) {
    lines.push('', 'Unexpected webhook answers:');
    for (const u of d.unexpected.slice(0, 10)) lines.push(`  ${u.eventId}: ${u.status} ${u.body}`);
  }
  if (v && v.failures.length > 0) {
    lines.push('', `Failures (${v.failures.length}):`);
    for (const f of v.failures.slice(0, 40)) {
      const where = [
        f.orderId === undefined ? '' : `order ${f.orderId}`,
        f.eventId ? `event ${f.eventId}` : '',
      ]
        .filter(Boolean)
        .join(', ');
      lines.push(`  ${f.kind.toUpperCase()} ${where}${where ? ': ' : ''}${f.what}`);
    }
    if (v.failures.length > 40) lines.push(`  … and ${v.failures.length - 40} more`);
  }
  if (report.error) lines.push('', `The run could not be judged: ${report.error}`);
  return lines.join('\n');
}

/** True when every invariant held and the run itself went through. */
export function passed(report: ChaosReport): boolean {
  // A 4xx/5xx other than 503 breaks the webhook contract even if every event got through later.
  return (
    !report.error && report.verdict?.passed === true && report.deliveries.unexpected.length === 0
  );
}
