// The reasons are part of the ledger's UNIQUE (order_id, reason) key, so they are wire names:
// renaming one would let an order that already got its points get them a second time.

export const POINTS_PER_CONFIRMED_ORDER = 100;

export const ORDER_CONFIRMED_REASON = 'order_confirmed';

export const ORDER_REFUNDED_REASON = 'order_refunded';
