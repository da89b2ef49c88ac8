/**
 * The order confirmation mail (the seed's SendOrderConfirmation / OrderConfirmed), as plain
 * data: who sends it to whom, what it says, and its Message-ID. No I/O here.
 */

/** What the confirmation needs to know about an order. */
export interface ConfirmedOrder {
  id: number;
  customerEmail: string;
  /** In the smallest currency unit. */
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
 * Message-ID of an order's confirmation. Derived from the order alone, never from a random
 * value or the attempt: when a retry sends the mail a second time (the gap between the server
 * accepting it and `confirmation_sent_at` being stamped), both copies carry the same ID, so mail
 * servers and clients that deduplicate by Message-ID show it once.
 */
export function confirmationMessageId(orderId: number, from: string): string {
  if (!Number.isSafeInteger(orderId) || orderId <= 0) {
    throw new Error(`order ID must be a positive integer (got ${orderId})`);
  }
  return `<order-${orderId}-confirmation@${senderDomain(from)}>`;
}

/** Builds the confirmation of one order, sent from `from` (`shop@example.com` or `Shop <shop@example.com>`). */
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

/**
 * The domain of the sender's address: the right-hand side of a Message-ID should be a domain
 * the sender controls, so IDs from different senders never collide.
 */
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
