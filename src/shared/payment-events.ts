/**
 * The internal events a provider's refund and dispute deliveries are mapped to (the HTTP edge
 * maps them; src/temporal/payment-starter.ts starts their workflows). Fixed by the contract
 * between the edge and the order side: change a name only together with both.
 */

/** The provider's payment reference, provider-qualified like event IDs: `stripe~pi_123`,
 *  `standard~<payment_id>`, or the bare payment event `id` for the contract's own scheme. */
export type PaymentRef = string;

export interface RefundEvent {
  /** Provider-qualified event ID: the dedup key (UNIQUE in the refunds table). */
  eventId: string;
  paymentRef: PaymentRef;
  /** What the event reports:
   *  - 'refund': one refund (Stripe `re_…` from refund.created/updated; Standard/contract
   *     `refund_id`), with that refund's amount and status. Several events may report the same
   *     refund (created, then updated): it is keyed by refundId, its latest status wins.
   *  - 'cumulative': the payment's refunded total so far (Stripe charge.refunded's
   *     `amount_refunded`, which may not list the refunds). */
  kind: 'refund' | 'cumulative';
  refundId?: string; // required for kind 'refund'
  amount: number; // smallest currency unit; for 'cumulative' the total so far
  currency?: string; // lowercase ISO 4217
  status: 'pending' | 'succeeded' | 'failed' | 'canceled';
  /** When the provider carries it (metadata), for matching when the reference is unknown. */
  orderId?: number;
}

export interface DisputeEvent {
  eventId: string; // provider-qualified, UNIQUE in the disputes' event ledger
  paymentRef: PaymentRef;
  disputeId: string; // Stripe `dp_…`, or the scheme's dispute_id
  amount: number;
  currency?: string;
  status: 'opened' | 'won' | 'lost';
  /** ISO 8601 (Stripe evidence_details.due_by), for the alert. */
  evidenceDueBy?: string;
  reason?: string;
  orderId?: number;
}

/** Workflow ID of the intake of one refund event: the dedup key on the Temporal side. */
export function refundWorkflowId(eventId: string): string {
  return `refund-${eventId}`;
}

/** Workflow ID of the intake of one dispute event. */
export function disputeWorkflowId(eventId: string): string {
  return `dispute-${eventId}`;
}

/** One recorded refund event, as the order's refunded total is computed from. */
export interface RecordedRefund {
  kind: RefundEvent['kind'];
  refundId: string | null;
  amount: number;
  status: RefundEvent['status'];
}

/**
 * How far a refund's status has come: a refund is pending, then succeeded, and may still fail or
 * be canceled after that (never the other way), so the furthest status reported is its latest
 * whatever order the events arrived in.
 */
const STATUS_RANK: Record<RefundEvent['status'], number> = {
  pending: 0,
  succeeded: 1,
  failed: 2,
  canceled: 2,
};

/**
 * The refunded total of a payment from every refund event recorded for it: each refund counts
 * once, with its furthest status, when that is `succeeded`; a cumulative report is a floor.
 * Decided by amounts, never by event names, so any arrival order (and any duplication) of the
 * same events gives the same total.
 */
export function refundedTotal(events: readonly RecordedRefund[]): number {
  const latest = new Map<string, RecordedRefund>();
  let cumulative = 0;
  for (const event of events) {
    if (event.kind === 'cumulative') {
      if (event.status === 'succeeded') cumulative = Math.max(cumulative, event.amount);
      continue;
    }
    if (event.refundId === null) continue;
    const known = latest.get(event.refundId);
    if (!known || STATUS_RANK[event.status] > STATUS_RANK[known.status]) {
      latest.set(event.refundId, event);
    }
  }
  const sum = [...latest.values()]
    .filter((r) => r.status === 'succeeded')
    .reduce((total, r) => total + r.amount, 0);
  return Math.max(sum, cumulative);
}

/** One recorded dispute event, as the order's dispute status is computed from. */
export interface RecordedDispute {
  disputeId: string;
  status: DisputeEvent['status'];
  /** When this event was recorded (ISO 8601): a closure's is the order's `dispute_closed_at`. */
  recordedAt: string;
}

/** Where an order's disputes stand: the columns `dispute_status` and `dispute_closed_at`. */
export interface DisputeOutcome {
  /** `opened` while any dispute is open; else `lost` if any was lost; else `won`; null: none. */
  status: DisputeEvent['status'] | null;
  /** The latest closure's recording time; null while any dispute is open. */
  closedAt: string | null;
}

/**
 * A dispute is opened, then closed won or lost, for good: its closure is its latest status
 * whatever order the provider's events arrived in. The provider sends no event time we could
 * order by (Stripe's dispute objects carry `created`, not when the status changed), so the
 * order is the one the dispute's life allows; two closures of one dispute (which no provider
 * sends) count as lost, the outcome that asks a person to look.
 */
const DISPUTE_RANK: Record<DisputeEvent['status'], number> = { opened: 0, won: 1, lost: 2 };

/**
 * The order's dispute outcome from every dispute event recorded for it: the same for any arrival
 * order and any duplication of the same events.
 */
export function disputeOutcome(events: readonly RecordedDispute[]): DisputeOutcome {
  const latest = new Map<string, RecordedDispute>();
  for (const event of events) {
    const known = latest.get(event.disputeId);
    if (
      !known ||
      DISPUTE_RANK[event.status] > DISPUTE_RANK[known.status] ||
      // The same closure reported twice: its first recording says when it was closed.
      (event.status === known.status && event.recordedAt < known.recordedAt)
    ) {
      latest.set(event.disputeId, event);
    }
  }
  const disputes = [...latest.values()];
  if (disputes.length === 0) return { status: null, closedAt: null };
  if (disputes.some((d) => d.status === 'opened')) return { status: 'opened', closedAt: null };
  const closedAt = disputes.map((d) => d.recordedAt).reduce((a, b) => (a > b ? a : b));
  return { status: disputes.some((d) => d.status === 'lost') ? 'lost' : 'won', closedAt };
}
