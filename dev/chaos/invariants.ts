import { shipmentIdempotencyKey } from '../../src/shared/constants';
import { POINTS_PER_CONFIRMED_ORDER } from '../../src/shared/loyalty';
import type { Evidence } from './evidence';

/**
 * The invariants of a chaos run, judged on the evidence. Precisely:
 *
 * Lost (each is a failure):
 * - an event that got a 200 has no payments row, or its workflow `payment-<id>` did not complete;
 * - an order has fewer payments rows than distinct events, is not `paid`, or its
 *   `shipment_status` is not `requested`;
 * - the warehouse created no shipment for an order;
 * - no confirmation mail reached the SMTP sink for an order, or `confirmation_sent_at` is unset;
 * - an order has no loyalty ledger row, or a customer's balance is below 100 x their orders;
 * - a double-charged order is not flagged for refund review;
 * - when the system has an invoice worker: an order has no invoice file `order-<id>.pdf`;
 * - any workflow in the namespace is not Completed (Running, Failed, Terminated, Timed out…).
 *
 * Doubled (each is a failure):
 * - more payments rows for an event than one, or for an order than its distinct events;
 * - more than one shipment created for an order (two 201s, or two idempotency keys). Warehouse
 *   *requests* may repeat (retries), but every one must carry the order's idempotency key
 *   `order-<id>-shipment`; a request with another key is a failure of its own;
 * - more than one ledger row for an order, or a balance above 100 x orders;
 * - a mail whose Message-ID is not an order's confirmation ID (a second, different mail);
 * - a single-charge order flagged for refund review.
 *
 * Duplicate mail (same Message-ID, deduplicable): a second copy of an order's confirmation with
 * the same Message-ID. The system sends, then stamps; a crash (or outage) between the SMTP
 * server's 250 and the stamp makes the retry send the copy again. docs/exactly-once.md accepts
 * this, so a duplicate is reported and passes, provided a disruption (a kill or an outage)
 * happened between the first copy and the next: without one it is a concurrency bug and fails.
 * `--strict-mail` makes every duplicate fail.
 */

export type FindingKind = 'lost' | 'doubled' | 'incomplete' | 'duplicate-mail' | 'wrong-key';

export interface Finding {
  kind: FindingKind;
  orderId?: number;
  eventId?: string;
  what: string;
}

/** A moment or a span of time when the system was disrupted: a kill, or an outage. */
export interface Disruption {
  from: number;
  to: number;
  what: string;
}

export interface DuplicateMail {
  orderId: number;
  messageId: string;
  copies: number;
  /** The disruption between the first copy and the next, when there was one. */
  explainedBy: string | undefined;
}

export interface Verdict {
  passed: boolean;
  failures: Finding[];
  duplicateMails: DuplicateMail[];
  totals: {
    paymentRows: number;
    shipments: number;
    warehouseRequests: number;
    warehouseReplays: number;
    mailsReceived: number;
    distinctMessageIds: number;
    ledgerRows: number;
    pointsAwarded: number;
    /** Invoice PDFs written; undefined when the system has no invoice worker. */
    invoices: number | undefined;
    workflowsByStatus: Record<string, number>;
    completedByType: Record<string, number>;
  };
}

// A mail activity may read the order up to this long before it sends (its start-to-close is 15 s):
// a disruption that started that long before the first copy can still be the cause.
const MAIL_ACTIVITY_SPAN_MS = 15_000;

export function checkInvariants(
  evidence: Evidence,
  options: {
    confirmationMessageId: (orderId: number) => string;
    disruptions: readonly Disruption[];
    strictMail: boolean;
  },
): Verdict {
  const failures: Finding[] = [];
  const fail = (finding: Finding) => failures.push(finding);

  // Events and their payment workflows.
  for (const order of evidence.orders) {
    for (const eventId of order.eventIds) {
      if (!evidence.acceptedEventIds.has(eventId)) {
        fail({ kind: 'lost', eventId, orderId: order.id, what: 'event never got a 200' });
        continue;
      }
      const rows = evidence.paymentsPerEvent.get(eventId) ?? 0;
      if (rows === 0) fail({ kind: 'lost', eventId, orderId: order.id, what: 'no payments row' });
      if (rows > 1) {
        fail({ kind: 'doubled', eventId, orderId: order.id, what: `${rows} payments rows` });
      }
      const workflow = evidence.paymentWorkflows.get(eventId);
      if (workflow?.status !== 'COMPLETED') {
        fail({
          kind: 'incomplete',
          eventId,
          orderId: order.id,
          what: `payment workflow ${workflow?.status ?? 'missing'}`,
        });
      }
    }
  }

  // Orders: rows, shipments, mails, points.
  const shipmentsPerOrder = countBy(evidence.shipments, (s) => s.orderId);
  const createdPerOrder = countBy(
    evidence.warehouseRequests.filter((r) => r.status === 201),
    (r) => Number(r.orderId),
  );
  const mailsById = new Map<string, Array<{ receivedAt: number }>>();
  for (const mail of evidence.mails) {
    const id = mail.messageId ?? '(none)';
    mailsById.set(id, [...(mailsById.get(id) ?? []), { receivedAt: Date.parse(mail.receivedAt) }]);
  }
  const expectedMessageIds = new Set<string>();
  const duplicateMails: DuplicateMail[] = [];
  const ordersPerUser = countBy(evidence.orders, (o) => o.userId);

  for (const order of evidence.orders) {
    const o = order.id;
    const row = evidence.orderRows.get(o);
    const payments = evidence.paymentsPerOrder.get(o) ?? 0;
    const expected = order.eventIds.length;
    if (payments < expected) {
      fail({ kind: 'lost', orderId: o, what: `${payments} of ${expected} payments recorded` });
    } else if (payments > expected) {
      fail({ kind: 'doubled', orderId: o, what: `${payments} payments for ${expected} events` });
    }
    if (row?.status !== 'paid') {
      fail({ kind: 'lost', orderId: o, what: `order status ${row?.status ?? 'missing'}` });
    }
    if (row?.shipmentStatus !== 'requested') {
      fail({ kind: 'lost', orderId: o, what: `shipment_status ${row?.shipmentStatus ?? 'null'}` });
    }
    const doubleCharged = expected > 1;
    if (doubleCharged && !row?.refundReviewRequestedAt) {
      fail({ kind: 'lost', orderId: o, what: 'double charge not flagged for refund review' });
    }
    if (!doubleCharged && row?.refundReviewRequestedAt) {
      fail({ kind: 'doubled', orderId: o, what: 'single payment flagged for refund review' });
    }

    const shipments = shipmentsPerOrder.get(o) ?? 0;
    const created = createdPerOrder.get(o) ?? 0;
    if (shipments === 0) fail({ kind: 'lost', orderId: o, what: 'no warehouse shipment' });
    if (shipments > 1 || created > 1) {
      fail({ kind: 'doubled', orderId: o, what: `${shipments} shipments (${created} x 201)` });
    }
    const key = shipmentIdempotencyKey(o);
    const foreignKeys = evidence.warehouseRequests.filter(
      (r) => Number(r.orderId) === o && r.idempotencyKey !== key,
    );
    if (foreignKeys.length > 0) {
      fail({
        kind: 'wrong-key',
        orderId: o,
        what: `warehouse request(s) without key ${key}: ${foreignKeys.map((r) => r.idempotencyKey ?? 'none').join(', ')}`,
      });
    }

    const messageId = options.confirmationMessageId(o);
    expectedMessageIds.add(messageId);
    const copies = (mailsById.get(messageId) ?? []).sort((a, b) => a.receivedAt - b.receivedAt);
    if (copies.length === 0) fail({ kind: 'lost', orderId: o, what: 'no confirmation mail' });
    if (!row?.confirmationSentAt) {
      fail({ kind: 'lost', orderId: o, what: 'confirmation_sent_at not stamped' });
    }
    if (copies.length > 1) {
      const first = copies[0]!.receivedAt;
      const last = copies[copies.length - 1]!.receivedAt;
      // A kill or crash after the first copy explains it best; else an outage under way.
      const cause =
        options.disruptions
          .filter((d) => d.from === d.to && d.from >= first - 50 && d.from <= last)
          .sort((a, b) => a.from - b.from)[0] ??
        options.disruptions.find((d) => d.from <= last && d.to >= first - MAIL_ACTIVITY_SPAN_MS);
      const duplicate: DuplicateMail = {
        orderId: o,
        messageId,
        copies: copies.length,
        explainedBy: cause?.what,
      };
      duplicateMails.push(duplicate);
      if (options.strictMail || !cause) {
        fail({
          kind: 'duplicate-mail',
          orderId: o,
          what: `${copies.length} copies of ${messageId}${cause ? '' : ' with no crash or outage in between'}`,
        });
      }
    }

    if (evidence.invoiceFiles && !evidence.invoiceFiles.includes(`order-${o}.pdf`)) {
      fail({ kind: 'lost', orderId: o, what: 'no invoice file' });
    }

    const ledgerRows = evidence.ledgerRowsPerOrder.get(o) ?? 0;
    if (ledgerRows === 0) fail({ kind: 'lost', orderId: o, what: 'no loyalty points' });
    if (ledgerRows > 1) fail({ kind: 'doubled', orderId: o, what: `${ledgerRows} ledger rows` });
  }

  for (const [id, copies] of mailsById) {
    if (!expectedMessageIds.has(id)) {
      fail({ kind: 'doubled', what: `${copies.length} mail(s) with unexpected Message-ID ${id}` });
    }
  }
  for (const [userId, orders] of ordersPerUser) {
    const balance = evidence.balancePerUser.get(userId) ?? 0;
    const expected = orders * POINTS_PER_CONFIRMED_ORDER;
    if (balance !== expected) {
      fail({
        kind: balance > expected ? 'doubled' : 'lost',
        what: `customer ${userId} has ${balance} points, expected ${expected}`,
      });
    }
  }

  // Every workflow the run caused must have completed.
  const workflowsByStatus: Record<string, number> = {};
  const completedByType: Record<string, number> = {};
  for (const w of evidence.workflows) {
    workflowsByStatus[w.status] = (workflowsByStatus[w.status] ?? 0) + 1;
    if (w.status === 'COMPLETED') completedByType[w.type] = (completedByType[w.type] ?? 0) + 1;
    else fail({ kind: 'incomplete', what: `${w.type} ${w.workflowId} is ${w.status}` });
  }

  const ledgerRows = [...evidence.ledgerRowsPerOrder.values()].reduce((a, b) => a + b, 0);
  return {
    passed: failures.length === 0,
    failures,
    duplicateMails,
    totals: {
      paymentRows: [...evidence.paymentsPerOrder.values()].reduce((a, b) => a + b, 0),
      shipments: evidence.shipments.length,
      warehouseRequests: evidence.warehouseRequests.length,
      warehouseReplays: evidence.warehouseRequests.filter((r) => r.status === 200).length,
      mailsReceived: evidence.mails.length,
      distinctMessageIds: mailsById.size,
      ledgerRows,
      pointsAwarded: [...evidence.balancePerUser.values()].reduce((a, b) => a + b, 0),
      invoices: evidence.invoiceFiles?.length,
      workflowsByStatus,
      completedByType,
    },
  };
}

function countBy<T, K>(items: readonly T[], key: (item: T) => K): Map<K, number> {
  const counts = new Map<K, number>();
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + 1);
  return counts;
}
