import type { Kysely } from 'kysely';
import { inReadCommitted } from '../connection';
import type { DisputeOutcome } from '../../shared/payment-events';
import type { Database, DisputeStatus, OrderRow, OrderStatus, ShipmentStatus } from '../schema';
import { createSettlementsRepository, type Settlement } from './settlements';

/** An order as the rest of the application sees it. Timestamps are ISO-8601 UTC strings. */
export interface Order {
  id: number;
  userId: number;
  customerEmail: string;
  status: OrderStatus;
  /** In the smallest currency unit. */
  totalAmount: number;
  idempotencyKey: string | null;
  idempotencyFingerprint: string | null;
  confirmationSentAt: string | null;
  shipmentStatus: ShipmentStatus | null;
  /** Set when a double charge, or a payment that is not the total, needs a refund review. */
  refundReviewRequestedAt: string | null;
  /** What the succeeded refunds of its payment add up to (smallest currency unit). */
  refundedAmount: number;
  /** Set when a full refund came after the warehouse took the order: review a return. */
  returnReviewRequestedAt: string | null;
  /** Where its disputes stand: `opened` while one is open, else `lost` or `won`; null: none. */
  disputeStatus: DisputeStatus | null;
  /** When the last of its disputes was closed; null while one is open, or none was. */
  disputeClosedAt: string | null;
  /** An operator's settlement of the order (`ops settle`); null when it was paid normally. */
  settlement: Settlement | null;
  createdAt: string;
  updatedAt: string;
}

export interface CreateOrderInput {
  userId: number;
  customerEmail: string;
  totalAmount: number;
  /** Client-chosen key: repeating a request with it returns the first order instead of a new one. */
  idempotencyKey?: string | null;
  /** sha256 of the canonical request body, to tell a replay from a different request reusing the key. */
  fingerprint?: string | null;
}

export type CreateOrderResult =
  | { kind: 'created'; order: Order }
  /** The same request came again under its key: here is the order it created the first time. */
  | { kind: 'replayed'; order: Order }
  /**
   * The key is taken by a different request (other body or other user). `order` is the one that
   * holds the key; it may belong to someone else, so do not echo it to the caller.
   */
  | { kind: 'key_reused_with_different_request'; order: Order };

export interface OrdersRepository {
  /** Creates an order, or finds the one already created under the same idempotency key. */
  createWithIdempotencyKey(input: CreateOrderInput): Promise<CreateOrderResult>;
  findById(id: number): Promise<Order | undefined>;
  /** Returns false when no such order exists. */
  setShipmentStatus(orderId: number, status: ShipmentStatus | null): Promise<boolean>;
  /**
   * Stamps `confirmation_sent_at` unless it is already set. True only for the call that stamped
   * it, so of several racing callers exactly one learns that it was first.
   */
  markConfirmationSent(orderId: number): Promise<boolean>;
  /** Flags the order for a refund review (a double charge); true only for the call that set it. */
  requestRefundReview(orderId: number): Promise<boolean>;
  /** Records what the order's refunds add up to now. */
  setRefundedAmount(orderId: number, amount: number): Promise<void>;
  /** Flags the order for a return review; true only for the call that set it. */
  requestReturnReview(orderId: number): Promise<boolean>;
  /** Records where the order's disputes stand now. */
  setDisputeOutcome(orderId: number, outcome: DisputeOutcome): Promise<void>;
  /**
   * Paid orders with no shipment request whose last change is older than `before` (ISO 8601),
   * oldest first, at most `limit` IDs, and how many there are in all: the fulfilment SLA's
   * breaches. The table has no paid-at column; its last change is the payment, or a later stamp
   * on it (the confirmation mail, a review flag), so the SLA can only start later, never earlier.
   */
  paidAwaitingShipment(before: string, limit: number): Promise<{ count: number; ids: number[] }>;
}

/** The order's timestamps that are set once and never change. */
type OnceStamp =
  'confirmation_sent_at' | 'refund_review_requested_at' | 'return_review_requested_at';

/** `db` must not be a transaction: creating an order opens its own. */
export function createOrdersRepository(db: Kysely<Database>): OrdersRepository {
  /**
   * Sets the stamp to now unless it is set already: the NULL guard is the claim, so of several
   * racing callers exactly one updates the row and learns that it was first.
   */
  async function stampOnce(orderId: number, stamp: OnceStamp): Promise<boolean> {
    const now = new Date().toISOString();
    const result = await db
      .updateTable('orders')
      .set({ [stamp]: now, updated_at: now })
      .where('id', '=', orderId)
      .where(stamp, 'is', null)
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  }

  return {
    async createWithIdempotencyKey(input) {
      // Timestamps come from the application's clock, the same way on both dialects.
      const now = new Date().toISOString();
      const values = {
        user_id: input.userId,
        customer_email: input.customerEmail,
        total_amount: input.totalAmount,
        idempotency_key: input.idempotencyKey ?? null,
        idempotency_fingerprint: input.fingerprint ?? null,
        created_at: now,
        updated_at: now,
      };

      const key = values.idempotency_key;
      return inReadCommitted(db, async (trx): Promise<CreateOrderResult> => {
        // Without a key the insert always succeeds (NULLs never conflict). With one, insert first
        // and let the UNIQUE constraint decide: a check-then-insert would let two
        // concurrent requests with the same key both pass the check. On PostgreSQL a conflicting
        // insert that is still uncommitted makes this one wait for its outcome.
        const inserted = await trx
          .insertInto('orders')
          .values(values)
          .onConflict((oc) => oc.column('idempotency_key').doNothing())
          .returningAll()
          .executeTakeFirst();
        if (inserted) return { kind: 'created', order: toOrder(inserted) };

        const holder = await trx
          .selectFrom('orders')
          .selectAll()
          .where('idempotency_key', '=', key)
          .executeTakeFirstOrThrow();
        const order = toOrder(holder);
        return isSameRequest(holder, input)
          ? { kind: 'replayed', order }
          : { kind: 'key_reused_with_different_request', order };
      });
    },

    async findById(id) {
      const row = await db.selectFrom('orders').selectAll().where('id', '=', id).executeTakeFirst();
      if (!row) return undefined;
      const settlement = await createSettlementsRepository(db).find(id);
      return { ...toOrder(row), settlement: settlement ?? null };
    },

    async paidAwaitingShipment(before, limit) {
      const waiting = db
        .selectFrom('orders')
        .where('status', '=', 'paid')
        .where('shipment_status', 'is', null)
        .where('updated_at', '<', before);
      const [{ count }, rows] = await Promise.all([
        waiting
          .select((eb) => eb.fn.countAll<number | string>().as('count'))
          .executeTakeFirstOrThrow(),
        waiting.select('id').orderBy('updated_at').orderBy('id').limit(limit).execute(),
      ]);
      return { count: Number(count), ids: rows.map((r) => r.id) };
    },

    async setShipmentStatus(orderId, status) {
      const result = await db
        .updateTable('orders')
        .set({ shipment_status: status, updated_at: new Date().toISOString() })
        .where('id', '=', orderId)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },

    markConfirmationSent: (orderId) => stampOnce(orderId, 'confirmation_sent_at'),

    requestRefundReview: (orderId) => stampOnce(orderId, 'refund_review_requested_at'),

    async setRefundedAmount(orderId, amount) {
      await db
        .updateTable('orders')
        .set({ refunded_amount: amount, updated_at: new Date().toISOString() })
        .where('id', '=', orderId)
        .where('refunded_amount', '!=', amount)
        .execute();
    },

    requestReturnReview: (orderId) => stampOnce(orderId, 'return_review_requested_at'),

    async setDisputeOutcome(orderId, outcome) {
      await db
        .updateTable('orders')
        .set({
          dispute_status: outcome.status,
          dispute_closed_at: outcome.closedAt,
          updated_at: new Date().toISOString(),
        })
        .where('id', '=', orderId)
        .execute();
    },
  };
}

/**
 * A replay must match the stored order field for field as well as by fingerprint: that keeps a
 * key reused by another user from returning their order, even when no fingerprint was given.
 */
function isSameRequest(row: OrderRow, input: CreateOrderInput): boolean {
  return (
    row.user_id === input.userId &&
    row.customer_email === input.customerEmail &&
    row.total_amount === input.totalAmount &&
    row.idempotency_fingerprint === (input.fingerprint ?? null)
  );
}

function toOrder(row: OrderRow): Order {
  return {
    id: row.id,
    userId: row.user_id,
    customerEmail: row.customer_email,
    status: row.status,
    totalAmount: row.total_amount,
    idempotencyKey: row.idempotency_key,
    idempotencyFingerprint: row.idempotency_fingerprint,
    confirmationSentAt: row.confirmation_sent_at,
    shipmentStatus: row.shipment_status,
    refundReviewRequestedAt: row.refund_review_requested_at,
    refundedAmount: Number(row.refunded_amount),
    returnReviewRequestedAt: row.return_review_requested_at,
    disputeStatus: row.dispute_status,
    disputeClosedAt: row.dispute_closed_at,
    settlement: null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}
