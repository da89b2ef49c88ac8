import type { ColumnType, Generated, Selectable } from 'kysely';
import type { DisputeEvent } from '../shared/payment-events';

// Row shapes stay in this folder: repositories hand out camelCase objects, so a column rename
// stays here.

/**
 * ISO-8601 UTC with milliseconds on both dialects (SQLite stores the text, the connection layer
 * formats PostgreSQL's `timestamptz`). Omitted on insert: the current time.
 */
export type Timestamp = ColumnType<string, string | undefined, string>;

export type OrderStatus = 'pending' | 'paid';

/** `null`: the warehouse not asked yet; `cancelled`: a full refund came before it shipped. */
export type ShipmentStatus = 'requested' | 'failed' | 'cancelled';

/** PostgreSQL refuses (an error, not no rows) to compare an `integer` ID with a larger number. */
export const MAX_ROW_ID = 2_147_483_647;

/** Amounts are `integer` too: a larger one is a 400 at the edge, not a write retried forever. */
export const MAX_INTEGER_COLUMN = 2_147_483_647;

export interface OrdersTable {
  id: Generated<number>;
  user_id: number;
  customer_email: string;
  status: ColumnType<OrderStatus, OrderStatus | undefined, OrderStatus>;
  total_amount: number;
  idempotency_key: string | null;
  /** sha256 of the canonical request body that first used the idempotency key. */
  idempotency_fingerprint: string | null;
  confirmation_sent_at: ColumnType<string | null, string | null | undefined, string | null>;
  shipment_status: ShipmentStatus | null;
  /** Set when a second, different payment arrived for the order: a person must review a refund. */
  refund_review_requested_at: ColumnType<string | null, string | null | undefined, string | null>;
  refunded_amount: ColumnType<number, number | undefined, number>;
  /** A full refund found the order already with the warehouse: a person must review a return. */
  return_review_requested_at: ColumnType<string | null, string | null | undefined, string | null>;
  dispute_status: ColumnType<
    DisputeStatus | null,
    DisputeStatus | null | undefined,
    DisputeStatus | null
  >;
  dispute_closed_at: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface PaymentsTable {
  id: Generated<number>;
  order_id: number;
  /** The provider's event ID: unique, so a redelivered event can never become a second payment. */
  provider_event_id: string;
  amount: number;
  /** Workflow run that recorded it: a retry of that run's activity finds its own row. */
  recorded_by_run_id: string | null;
  /** 1 when this payment moved the order from pending to paid (it owns the fulfilment). */
  first_for_order: ColumnType<number, number | undefined, number>;
  /** First run ID of the order chain that finished with this event (a reset keeps it), or null. */
  handled_by_chain: ColumnType<string | null, string | null | undefined, string | null>;
  provider_payment_ref: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export interface RefundsTable {
  id: Generated<number>;
  provider_event_id: string;
  payment_ref: string;
  kind: 'refund' | 'cumulative';
  refund_id: string | null;
  amount: number;
  currency: string | null;
  status: 'pending' | 'succeeded' | 'failed' | 'canceled';
  /** Null until its payment is recorded (a refund may arrive first). */
  order_id: number | null;
  /** The order workflow chain that finished with it (as payments.handled_by_chain). */
  handled_by_chain: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
}

export type RefundRow = Selectable<RefundsTable>;

export type DisputeStatus = DisputeEvent['status'];

export interface DisputesTable {
  id: Generated<number>;
  provider_event_id: string;
  dispute_id: string;
  payment_ref: string;
  status: DisputeStatus;
  amount: number;
  currency: string | null;
  evidence_due_by: string | null;
  reason: string | null;
  /** Null until its payment is recorded (a dispute may arrive first). */
  order_id: number | null;
  /** The order workflow chain that finished with it (as payments.handled_by_chain). */
  handled_by_chain: ColumnType<string | null, string | null | undefined, string | null>;
  recorded_at: Timestamp;
}

/** An operator's settlement of a pending order: one per order (UNIQUE order_id). */
export interface SettlementsTable {
  id: Generated<number>;
  order_id: number;
  settled_by: string;
  reason: string;
  payment_ids: string;
  handled_by_chain: ColumnType<string | null, string | null | undefined, string | null>;
  settled_at: Timestamp;
}

export interface Database {
  orders: OrdersTable;
  payments: PaymentsTable;
  loyalty_accounts: LoyaltyAccountsTable;
  loyalty_ledger: LoyaltyLedgerTable;
  stock_snapshots: StockSnapshotsTable;
  alert_deliveries: AlertDeliveriesTable;
  unmatched_deliveries: UnmatchedDeliveriesTable;
  refunds: RefundsTable;
  partner_pauses: PartnerPausesTable;
  disputes: DisputesTable;
  settlements: SettlementsTable;
}

/** The last pause of each partner an operator paused (migration 0013 says how it is used). */
export interface PartnerPausesTable {
  partner: string;
  paused_at: string;
  paused_by: string;
  reason: string | null;
  resumed_at: string | null;
  resume_rate: number | null;
  /** bigint: PostgreSQL hands it back as a string. */
  release_cursor_ms: ColumnType<string | number | null, number | null, number | null>;
}

/** An alert the sink accepted (2xx), stamped right after: a retry finds it and posts nothing. */
export interface AlertDeliveriesTable {
  idempotency_key: string;
  delivered_at: Timestamp;
}

/** A signed delivery answered 2xx but not acted on, for an operator; a redelivery only counts. */
export interface UnmatchedDeliveriesTable {
  id: Generated<number>;
  reason: string;
  provider: string;
  event_id: string;
  payload: string;
  delivery_count: ColumnType<number, number | undefined, number>;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
  resolution: string | null;
  resolved_order_id: number | null;
  resolution_note: string | null;
  resolved_at: ColumnType<string | null, string | null | undefined, string | null>;
  /** The workflow run that kept it (the payment workflow's unknown orders); null from the edge. */
  recorded_by_run_id: ColumnType<string | null, string | null | undefined, string | null>;
}

export type UnmatchedDeliveryRow = Selectable<UnmatchedDeliveriesTable>;

export type OrderRow = Selectable<OrdersTable>;
export type PaymentRow = Selectable<PaymentsTable>;

export interface StockSnapshotsTable {
  id: Generated<number>;
  /** The moment the snapshot stands for (the scheduled run's time); UNIQUE, so retries reuse it. */
  taken_at: string;
  orders_paid: number;
  shipments_requested: number;
  shipments_failed: number;
  created_at: Timestamp;
}

export interface LoyaltyAccountsTable {
  user_id: number;
  balance: ColumnType<number, number | undefined, number>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** Every award (or reversal) of points; UNIQUE (order_id, reason) makes each one happen once. */
export interface LoyaltyLedgerTable {
  id: Generated<number>;
  user_id: number;
  order_id: number;
  points: number;
  reason: string;
  created_at: Timestamp;
}

export type LoyaltyLedgerRow = Selectable<LoyaltyLedgerTable>;
