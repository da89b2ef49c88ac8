// Plain data, no I/O.

export interface ConfirmedOrder {
  id: number;
  customerEmail: string;
  totalAmount: number;
}

export interface OrderConfirmationMessage {
  from: string;
  to: string;
  subject: string;
  text: string;
  /** `<order-<id>-confirmation@<domain of from>>`, the same for every attempt. */
  messageId: string;
}

/**
 * From the order alone: a retry that sends the mail again (between the server's acceptance and
 * `confirmation_sent_at`) carries the same ID, and deduplicating clients show it once.
 */
export function confirmationMessageId(orderId: number, from: string): string {
  if (!Number.isSafeInteger(orderId) || orderId <= 0) {
    throw new Error(`order ID must be a positive integer (got ${orderId})`);
  }
  return `<order-${orderId}-confirmation@${senderDomain(from)}>`;
}

/** Sent from `from`: `shop@example.com` or `Shop <shop@example.com>`. */
export function buildOrderConfirmation(
  order: ConfirmedOrder,
  from: string,
): OrderConfirmationMessage {
  return {
    from,
    to: order.customerEmail,
    subject: `Order #${order.id} confirmed`,
    text: [
      'Thank you for your order.',
      '',
      `Order: #${order.id}`,
      `Total amount: ${order.totalAmount}`,
      '',
      'We will let you know when it ships.',
    ].join('\n'),
    messageId: confirmationMessageId(order.id, from),
  };
}

/** A Message-ID's right-hand side is a domain the sender controls, so senders never collide. */
export function senderDomain(from: string): string {
  const bracketed = /<([^<>]*)>\s*$/.exec(from);
  const address = (bracketed ? bracketed[1]! : from).trim();
  const at = address.lastIndexOf('@');
  const domain = at < 0 ? '' : address.slice(at + 1).toLowerCase();
  if (!/^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*$/.test(domain)) {
    throw new Error(
      `sender address "${from}" has no usable domain (expected e.g. shop@example.com)`,
    );
  }
  return domain;
}
