/**
 * Names that cross process boundaries (task queues, workflow IDs, event types). They are wire
 * names: renaming one strands work that is already queued or running under the old name.
 */

/** Task queue of user-facing payment work (the contract names it). */
export const PAYMENTS_TASK_QUEUE = 'payments';

/** The only provider event that starts a payment workflow; every other event is acknowledged and ignored. */
export const PAYMENT_SUCCEEDED_EVENT = 'payment.succeeded';

/** Event IDs become part of workflow IDs, so they are restricted to a safe, bounded alphabet. */
export const EVENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$/;

/** Workflow ID of the payment workflow for one provider event: the dedup key on the Temporal side. */
export function paymentWorkflowId(eventId: string): string {
  return `payment-${eventId}`;
}

/**
 * Idempotency key sent to the warehouse for the shipment of one order. Derived from the order
 * alone (never from the event or a random value): however many payment events or retries reach
 * the warehouse, they all name the same shipment.
 */
export function shipmentIdempotencyKey(orderId: number): string {
  return `order-${orderId}-shipment`;
}

/**
 * Idempotency key of the cancel of an order's shipment, from the order alone: every attempt,
 * reset and repeated refund names the same cancel, and the warehouse replays its first answer.
 */
export function shipmentCancelIdempotencyKey(orderId: number): string {
  return `order-${orderId}-shipment-cancel`;
}

/**
 * Task queue of heavy, slow work (PDF invoices, batch exports) with its own worker pool, so a
 * backlog there never delays user-facing work on `payments`.
 */
export const HEAVY_TASK_QUEUE = 'heavy';
