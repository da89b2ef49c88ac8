/**
 * Loyalty points (the seed's exercise). Workflow-safe constants: the reason is stored in the
 * ledger and is part of its UNIQUE (order_id, reason) key, so it is a wire name: renaming it
 * would let an order that already got its points get them a second time.
 */

/** Points a user earns for each confirmed order. */
export const POINTS_PER_CONFIRMED_ORDER = 100;

/** Ledger reason of the points awarded for a confirmed order. */
export const ORDER_CONFIRMED_REASON = 'order_confirmed';

/** Ledger reason of the points taken back when the order was refunded in full. */
export const ORDER_REFUNDED_REASON = 'order_refunded';
