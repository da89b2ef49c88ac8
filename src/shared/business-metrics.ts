// Emitted through the SDK's meter, on the worker's Prometheus endpoint without the `temporal_`
// prefix; the dashboard and alert rules under deploy/ query these names.
export const BusinessMetric = {
  /** Counter, label `outcome`: what became of each paid order's fulfilment. */
  fulfilments: 'order_payments_fulfilments_total',
  /** Counter, labels `cause` (the last failure's type) and `reason` (why retrying stopped). */
  compensations: 'order_payments_compensations_total',
  /** Histogram: from the webhook accepting the payment to the warehouse taking the order. */
  paymentToShipment: 'order_payments_payment_to_shipment_seconds',
} as const;

export type FulfilmentOutcome = 'shipped' | 'compensated' | 'refunded_before_shipment';

/**
 * Seconds. A healthy order ships within a second or two; a warehouse blip adds the backoff's 10,
 * 30 and 120 s; an outage runs to the 30-minute deadline, or for hours with the partner paused.
 */
export const PAYMENT_TO_SHIPMENT_BUCKETS_SECONDS: readonly number[] = [
  0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 7200, 14400,
];
