/** Input of the payment workflow: one provider event, already authenticated and validated. */
export interface PaymentWorkflowInput {
  eventId: string;
  orderId: number;
  /** Amount in the smallest currency unit (e.g. yen, cents). */
  amount: number;
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
