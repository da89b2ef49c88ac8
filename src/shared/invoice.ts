/** Workflow ID of an order's invoice: one invoice workflow per order. */
export function invoiceWorkflowId(orderId: number): string {
  return `invoice-order-${orderId}`;
}
