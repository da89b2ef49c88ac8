import type { PaymentRef } from './payment-events';

export interface PaymentWorkflowInput {
  eventId: string;
  orderId: number;
  amount: number;
  /** `payments.provider_payment_ref`, how refunds and disputes name it; absent: the event ID. */
  paymentRef?: PaymentRef;
  currency?: string;
}

export type PaymentWorkflowResult = PaymentRecordedResult | PaymentUnmatchedResult;

/** The payment is recorded (results without `kind`: every result before unmatched existed). */
export interface PaymentRecordedResult {
  kind?: undefined;
  paymentId: number;
  created: boolean;
  /** Null when an order run had already finished with it (nothing handed over). */
  orderWorkflowId: string | null;
}

/** The order does not exist: the event waits in the unmatched inbox (`ops unmatched list`). */
export interface PaymentUnmatchedResult {
  kind: 'unmatched';
  reason: 'unknown_order';
  unmatchedId: number;
  /** False when the event was already kept (a redelivery, counted there). */
  created: boolean;
  orderId: number;
}
