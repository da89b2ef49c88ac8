// Wire names: renaming one strands work already queued or running under the old name.

export const PAYMENTS_TASK_QUEUE = 'payments';

export const PAYMENT_SUCCEEDED_EVENT = 'payment.succeeded';

/** Event IDs become part of workflow IDs, so they are restricted to a safe, bounded alphabet. */
export const EVENT_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9_.:-]{0,199}$/;

/** The dedup key on the Temporal side. */
export function paymentWorkflowId(eventId: string): string {
  return `payment-${eventId}`;
}

/** From the order alone: every payment event and retry names the same shipment. */
export function shipmentIdempotencyKey(orderId: number): string {
  return `order-${orderId}-shipment`;
}

/** From the order alone: every attempt, reset and refund names one cancel. */
export function shipmentCancelIdempotencyKey(orderId: number): string {
  return `order-${orderId}-shipment-cancel`;
}

/** Its own worker pool, so a backlog of PDFs and exports never delays `payments`. */
export const HEAVY_TASK_QUEUE = 'heavy';
