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
export interface PaymentWorkflowResult {
  paymentId: number;
  /** False when another execution already recorded this event. */
  created: boolean;
  /**
   * The order workflow this payment was handed to; null when an order run had already finished
   * with it (nothing was handed over).
   */
  orderWorkflowId: string | null;
}
