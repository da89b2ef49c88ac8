import type { CrashPointName } from '../../src/activities/crash-points';
import { orderExtra, type Counts, type Outage } from './crash-counts';
import { armName, type PointRun } from './crash-matrix';
import type { OrderExpectation } from './crash-scenario-spec';
import type { Fault, Hold, Stack } from './crash-stack';

/**
 * The judge of an order row: the counts a scenario expects, less the copies a crash may
 * duplicate in the windows docs/exactly-once.md documents (the 250 or 2xx before its stamp).
 */

/** The counts a scenario expects, and the checks of the order's row and its failed run. */
export function judgeOrder(
  stack: Stack,
  expected: OrderExpectation,
  counts: Counts,
  run: PointRun,
  outage: Outage | undefined,
  hold?: Hold,
): string[] {
  const problems: string[] = [];
  const want = (what: keyof Counts, value: number, actual: number) => {
    if (actual !== value) problems.push(`${what} ${actual}, expected ${value}`);
  };
  want('payments', expected.payments, counts.payments);
  want('shipments', expected.shipments, counts.shipments);
  const mailWindow = mayDuplicateMail(run, stack.fault);
  const mails = explainedDuplicate(counts.mailTimes, mailWindow, outage) ? 1 : counts.mails;
  want('mails', expected.mails, mails);
  want('otherMails', 0, counts.otherMails);
  want('ledger', expected.ledger, counts.ledger);
  // A repeated alert carries the same Idempotency-Key (one failed run, one key).
  const alertWindow = mayDuplicateAlert(run, stack.fault);
  const alerts =
    explainedDuplicate(counts.alertTimes, alertWindow, outage) || killedInFlight(counts, hold)
      ? 1
      : counts.alerts;
  want('alerts', expected.alerts, alerts);
  if (alerts !== expected.alerts) problems.push(`alert keys ${counts.alertKeys.join(', ')}`);
  want('failedRuns', expected.failedRuns, counts.failedRuns);
  const extra = orderExtra({
    ...expected,
    warehouseShipment:
      expected.warehouseShipment ?? (expected.shipments > 0 ? 'requested' : 'none'),
  });
  if (counts.extra !== extra) problems.push(`${counts.extra}, expected ${extra}`);
  return problems;
}

/**
 * The one window where a crash sends the confirmation twice (docs/exactly-once.md): the SMTP
 * server said 250 and `confirmation_sent_at` is not stamped yet. Both sides name that moment. A
 * database outage that starts before the send can last past it, so the stamp fails after the 250
 * and the retry sends again: the same window, held open by the outage.
 */
export function mayDuplicateMail(run: PointRun, fault: Fault): boolean {
  return mayDuplicate(run, fault, 'sendOrderConfirmation.smtp', 'sendOrderConfirmation.stamp');
}

/** The same window for an alert: the webhook said 2xx, the delivery is not stamped yet. */
export function mayDuplicateAlert(run: PointRun, fault: Fault): boolean {
  return mayDuplicate(run, fault, 'deliverAlert.post', 'deliverAlert.stamp');
}

/**
 * Two copies, explained: the point is in the window, or a database outage overlapped the time
 * between the copies (the first went out before the database was back, the second after the
 * outage began). The second is how a database outage holds open the window of a mail or alert in
 * flight beside the point (the invoice runs beside the confirmation), which the stamp after the
 * send cannot close (docs/exactly-once.md).
 */
export function explainedDuplicate(
  times: readonly number[],
  inWindow: boolean,
  outage: Outage | undefined,
): boolean {
  if (times.length !== 2) return false;
  const [first, second] = [...times].sort((a, b) => a - b) as [number, number];
  return inWindow || (outage !== undefined && first <= outage.to && second >= outage.from);
}

/**
 * Two posts of one alert (the same Idempotency-Key), the first before the worker froze at the
 * point and the second after its kill: the kill caught an alert in flight beside the point, in
 * the same process (an order's alert child runs beside its order run), between its post and its
 * stamp. That is the window of deliverAlert.post@after reached from another point; the key lets
 * the sink drop the second (docs/exactly-once.md).
 */
export function killedInFlight(counts: Counts, hold: Hold | undefined): boolean {
  if (!hold?.killed || counts.alertTimes.length !== 2) return false;
  const [firstKey, secondKey] = counts.alertKeys;
  const [first, second] = counts.alertTimes as [number, number];
  return (
    firstKey !== undefined &&
    firstKey === secondKey &&
    Math.min(first, second) <= hold.at &&
    Math.max(first, second) >= hold.at
  );
}

function mayDuplicate(
  run: PointRun,
  fault: Fault,
  send: CrashPointName,
  stamp: CrashPointName,
): boolean {
  const arm = armName(run);
  const window = [`${send}@after`, `${stamp}@before`];
  if (fault === 'db-down' || fault === 'db-hung') window.push(`${send}@before`);
  return window.includes(arm);
}
