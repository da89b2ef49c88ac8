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
