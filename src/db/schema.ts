import type { ColumnType, Generated, Selectable } from 'kysely';
import type { DisputeEvent } from '../shared/payment-events';

/**
 * Table types as Kysely sees them. Only the db folder uses these row shapes; repositories hand
 * callers camelCase domain objects instead, so a column rename stays inside this folder.
 */

/**
 * A timestamp as an ISO-8601 UTC string with milliseconds (`2025-01-31T09:15:00.000Z`). SQLite
 * stores exactly that text; PostgreSQL stores `timestamptz` and the connection layer formats what
 * it reads the same way, so both dialects read back identical strings. Omitted on insert, the
 * column's default (the current time) applies.
 */
export type Timestamp = ColumnType<string, string | undefined, string>;

export type OrderStatus = 'pending' | 'paid';

/** `null`: nobody has asked the warehouse yet. */
/** `cancelled`: a full refund came before it shipped, and the warehouse cancelled it. */
export type ShipmentStatus = 'requested' | 'failed' | 'cancelled';

/**
 * The largest row ID either database can hold: IDs are PostgreSQL `integer` columns (SQLite's
 * are 64-bit). A larger number names no row, and PostgreSQL refuses to compare a column with it
 * (an error, not an empty result), so callers check it before asking.
 */
export const MAX_ROW_ID = 2_147_483_647;

/**
 * The largest amount or user ID the tables hold: they are PostgreSQL `integer` columns too
 * (amounts in the smallest currency unit: up to 21,474,836.47 in a two-decimal currency). A
 * larger number must be refused at the edge with a 400; PostgreSQL would reject the write with
 * an error (a 500, or an activity retried forever), while SQLite would store it.
 */
export const MAX_INTEGER_COLUMN = 2_147_483_647;

export interface OrdersTable {
  id: Generated<number>;
  user_id: number;
  customer_email: string;
  status: ColumnType<OrderStatus, OrderStatus | undefined, OrderStatus>;
  /** In the smallest currency unit (yen, cents): integers never round. */
  total_amount: number;
  idempotency_key: string | null;
  /** sha256 of the canonical request body that first used the idempotency key. */
  idempotency_fingerprint: string | null;
  confirmation_sent_at: ColumnType<string | null, string | null | undefined, string | null>;
  shipment_status: ShipmentStatus | null;
  /** Set when a second, different payment arrived for the order: a person must review a refund. */
  refund_review_requested_at: ColumnType<string | null, string | null | undefined, string | null>;
  /** What the succeeded refunds of its payment add up to (smallest currency unit). */
  refunded_amount: ColumnType<number, number | undefined, number>;
  /** Set when a full refund found the order already with the warehouse: a person must review a return. */
  return_review_requested_at: ColumnType<string | null, string | null | undefined, string | null>;
  /** Where the order's disputes stand (src/shared/payment-events.ts, disputeOutcome); null: none. */
  dispute_status: ColumnType<
    DisputeStatus | null,
    DisputeStatus | null | undefined,
    DisputeStatus | null
  >;
  /** When the last of its disputes was closed (recorded); null while one is open, or none was. */
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
  /**
   * The first run ID of the order workflow chain that finished with this payment's event (its
   * work done or failed for good); null until then. A reset keeps the chain's first run ID.
   */
  handled_by_chain: ColumnType<string | null, string | null | undefined, string | null>;
  /** The provider's reference of the payment (e.g. `stripe~pi_…`); refunds name it. */
  provider_payment_ref: ColumnType<string | null, string | null | undefined, string | null>;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** One refund event of a provider, recorded once (UNIQUE provider_event_id). */
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

/** One dispute event of a provider, recorded once (UNIQUE provider_event_id). */
export interface DisputesTable {
  id: Generated<number>;
  provider_event_id: string;
  dispute_id: string;
  payment_ref: string;
  status: DisputeStatus;
  amount: number;
  currency: string | null;
  /** ISO 8601, as the provider gave it (Stripe evidence_details.due_by). */
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
  /** JSON array of the payment IDs the settlement counted. */
  payment_ids: string;
  /** The order workflow chain that fulfilled it (as payments.handled_by_chain). */
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

/**
 * A signed delivery we answered 2xx but could not act on, kept for an operator (the unmatched
 * inbox). One row per provider-qualified event ID; a redelivery only counts.
 */
export interface UnmatchedDeliveriesTable {
  id: Generated<number>;
  reason: string;
  provider: string;
  event_id: string;
  /** JSON text of the internal event or the provider's object. */
  payload: string;
  delivery_count: ColumnType<number, number | undefined, number>;
  first_seen_at: Timestamp;
  last_seen_at: Timestamp;
  /** `attached` | `refunded_outside` | `dismissed`; null while open. */
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

/** One count of paid orders and shipment states, written by the `aggregate-stock` schedule. */
export interface StockSnapshotsTable {
  id: Generated<number>;
  /** The moment the snapshot stands for (the scheduled run's time); UNIQUE, so retries reuse it. */
  taken_at: string;
  orders_paid: number;
  shipments_requested: number;
  shipments_failed: number;
  created_at: Timestamp;
}

/** One account per user, created by the first award. */
export interface LoyaltyAccountsTable {
  user_id: number;
  /** Never below zero (CHECK). Only moves together with a new ledger row. */
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
