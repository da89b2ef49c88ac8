import { existsSync, readdirSync } from 'node:fs';
import { setTimeout as delay } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { confirmationMessageId } from '../../src/mail/order-confirmation';
import type { ChaosReport } from './chaos-report';
import { MAIL_FROM, type Dirs, type Stack } from './chaos-stack';
import { gatherEvidence, type PlannedOrder } from './evidence';
import { checkInvariants, type Disruption } from './invariants';
import type { ChaosOptions } from './options';
import type { PaymentEvent } from './provider';
import type { SupervisedProcess } from '../../harness/process/supervisor';

/**
 * The end of a chaos run: waiting until every workflow has settled, then the evidence gathered,
 * the invariants checked, and the kills in the commit window and the unreported commits told.
 */

export async function judge(ctx: {
  stack: Stack;
  processes: SupervisedProcess[];
  orders: PlannedOrder[];
  accepted: ReadonlySet<string>;
  disruptions: Disruption[];
  options: ChaosOptions;
  dirs: Dirs;
  report: ChaosReport;
}): Promise<void> {
  const { stack, processes, orders, accepted, disruptions, options, dirs, report } = ctx;
  for (const kill of report.kills) {
    disruptions.push({ from: kill.at, to: kill.at, what: `SIGKILL ${kill.worker} (${kill.kind})` });
  }
  // Unexpected exits (crashes) are disruptions too: they can hit the same windows as our kills.
  for (const p of processes) {
    for (const exit of p.unexpectedExits) {
      disruptions.push({ from: exit.at, to: exit.at, what: `${p.name} crashed` });
    }
  }
  const invoiceFiles = existsSync(dirs.invoices) ? readdirSync(dirs.invoices) : [];
  report.strayTempFiles = invoiceFiles.filter((f) => f.endsWith('.tmp')).length;
  const evidence = await gatherEvidence({
    db: stack.db,
    client: stack.client,
    orders,
    acceptedEventIds: accepted,
    warehouseRequests: stack.warehouse.requests,
    shipments: [...stack.warehouse.shipments.values()],
    mails: stack.smtp.messages,
    invoiceFiles:
      report.heavyWorkers > 0 ? invoiceFiles.filter((f) => !f.endsWith('.tmp')) : undefined,
  });
  report.verdict = checkInvariants(evidence, {
    confirmationMessageId: (orderId) => confirmationMessageId(orderId, MAIL_FROM),
    disruptions,
    strictMail: options.strictMail,
  });

  const shippedOrders = new Set(evidence.shipments.map((s) => s.orderId));
  for (const kill of report.kills) {
    if (kill.kind !== 'payment-commit' || kill.eventId === undefined) continue;
    const workflow = evidence.paymentWorkflows.get(kill.eventId);
    const completedAttempt = workflow?.recordPaymentAttempt;
    report.commitWindow.push({
      eventId: kill.eventId,
      orderId: kill.orderId,
      killedAttempt: kill.attempt,
      completedAttempt,
      hit:
        workflow?.recordPaymentCompletedBy !== undefined &&
        !workflow.recordPaymentCompletedBy.startsWith(`${kill.pid}@`),
      created: workflow?.result?.created,
      shipped: kill.orderId !== undefined && shippedOrders.has(kill.orderId),
    });
  }
  const workflows = [...evidence.paymentWorkflows.values()];
  report.recordPaymentRetried = workflows.filter((w) => (w.recordPaymentAttempt ?? 1) > 1).length;
  for (const w of workflows) {
    if ((w.recordPaymentAttempt ?? 1) <= 1) continue;
    const cause = failureKind(w.recordPaymentLastFailure);
    report.recordPaymentRetryCauses[cause] = (report.recordPaymentRetryCauses[cause] ?? 0) + 1;
  }
  const origin = report.stormStartedAt ?? report.startedAt;
  // Each event has exactly one execution here (the server never forgot a workflow ID), so a
  // `created: false` can only come from an earlier attempt of the same execution.
  for (const order of orders) {
    for (const eventId of order.eventIds) {
      const workflow = evidence.paymentWorkflows.get(eventId);
      if (workflow?.result?.created !== false) continue;
      const committedAt = evidence.paymentCreatedAt.get(eventId);
      const cause = committedAt === undefined ? undefined : likelyCause(disruptions, committedAt);
      report.unreportedCommits.push({
        eventId,
        orderId: order.id,
        committedAtS:
          committedAt === undefined ? undefined : Math.round((committedAt - origin) / 100) / 10,
        completedAttempt: workflow.recordPaymentAttempt,
        previousAttemptFailure: workflow.recordPaymentLastFailure,
        cause,
      });
    }
  }
}

/** True once nothing runs and every payment workflow has closed; false at the deadline. */
export async function waitForConvergence(
  client: Client,
  events: PaymentEvent[],
  timeoutMs: number,
  signal: AbortSignal,
  log: (line: string) => void,
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  let lastReport = 0;
  for (;;) {
    try {
      const [running, closed] = await Promise.all([
        client.workflow.count('ExecutionStatus = "Running"'),
        client.workflow.count('WorkflowType = "paymentWorkflow" AND ExecutionStatus != "Running"'),
      ]);
      if (running.count === 0 && closed.count >= events.length) return true;
      if (Date.now() - lastReport > 10_000) {
        lastReport = Date.now();
        log(
          `${running.count} workflow(s) running, ${closed.count}/${events.length} payments closed`,
        );
      }
    } catch {
      // Visibility not answering for a moment: ask again.
    }
    if (Date.now() > deadline) return false;
    await delay(1_000, undefined, { signal });
  }
}

/**
 * What most likely kept a committed attempt from reporting: the first kill or crash after the
 * commit (the clocks of worker and driver are the same machine's), else an outage under way.
 */
function likelyCause(disruptions: readonly Disruption[], committedAt: number): string | undefined {
  const soon = (d: Disruption) => d.to >= committedAt - 50 && d.from <= committedAt + 15_000;
  const instant = disruptions
    .filter((d) => d.from === d.to && d.from >= committedAt - 50 && soon(d))
    .sort((a, b) => a.from - b.from)[0];
  return (instant ?? disruptions.find((d) => d.from !== d.to && soon(d)))?.what;
}

/** A short name for an activity failure, to count retries by cause. */
function failureKind(message: string | undefined): string {
  if (!message) return 'unknown';
  if (/timeout|timed out/i.test(message)) return 'activity timeout (worker gone or too slow)';
  if (/ECONNREFUSED|terminated|connect|shutdown|database system/i.test(message)) {
    return 'database unavailable';
  }
  return message.slice(0, 60);
}
