import type { PaymentRef } from './payment-events';

/** Input of the payment workflow: one provider event, already authenticated and validated. */
export interface PaymentWorkflowInput {
  eventId: string;
  orderId: number;
  /** Amount in the smallest currency unit (e.g. yen, cents). */
  amount: number;
  /**
   * The provider's reference of the payment (`payments.provider_payment_ref`): refunds and
   * disputes name the payment by it. Absent: the event ID is the reference.
   */
  paymentRef?: PaymentRef;
  /** Lowercase ISO 4217, when the provider says. */
  currency?: string;
}

/** Result of the payment workflow, kept in history and shown in the Web UI. */
export type PaymentWorkflowResult = PaymentRecordedResult | PaymentUnmatchedResult;

/** The payment is recorded (results without `kind`: every result before unmatched existed). */
export interface PaymentRecordedResult {
  kind?: undefined;
  paymentId: number;
  /** False when another execution already recorded this event. */
  created: boolean;
  /**
   * The order workflow this payment was handed to; null when an order run had already finished
   * with it (nothing was handed over).
   */
  orderWorkflowId: string | null;
}

/**
 * The order does not exist: no payment was recorded, and the event is kept in the unmatched
 * inbox (`npm run ops -- unmatched list`) for an operator to attach, refund or dismiss.
 */
export interface PaymentUnmatchedResult {
  kind: 'unmatched';
  reason: 'unknown_order';
  /** The inbox entry's ID, as the operator names it. */
  unmatchedId: number;
  /** False when the event was already kept (a redelivery, counted there). */
  created: boolean;
  orderId: number;
}
