import {
  buildOrderConfirmation,
  confirmationMessageId,
  senderDomain,
} from '../../src/mail/order-confirmation';

describe('order confirmation message', () => {
  const order = { id: 42, customerEmail: 'buyer@example.com', totalAmount: 5_400 };

  it('is addressed to the customer and names the order and its amount', () => {
    const mail = buildOrderConfirmation(order, 'Shop <shop@example.com>');

    expect(mail).toMatchObject({
      from: 'Shop <shop@example.com>',
      to: 'buyer@example.com',
      subject: 'Order #42 confirmed',
    });
    expect(mail.text).toContain('Order: #42');
    expect(mail.text).toContain('Total amount: 5400');
  });

  it('has a Message-ID derived from the order and the sender domain alone, the same every time', () => {
    const first = buildOrderConfirmation(order, 'Shop <shop@Example.COM>');
    const again = buildOrderConfirmation(order, 'noreply@example.com');

    expect(first.messageId).toBe('<order-42-confirmation@example.com>');
    expect(again.messageId).toBe(first.messageId);
    expect(confirmationMessageId(43, 'shop@example.com')).toBe(
      '<order-43-confirmation@example.com>',
    );
  });

  it('takes the domain of a bare or a named sender address', () => {
    expect(senderDomain('shop@mail.example.co.jp')).toBe('mail.example.co.jp');
    expect(senderDomain('"Shop, Inc." <orders@shop.example>')).toBe('shop.example');
  });

  it('refuses a sender without a usable domain and an order ID that is not a positive integer', () => {
    for (const from of ['shop', 'shop@', 'Shop <shop@exa mple.com>', 'shop@-bad.example']) {
      expect(() => senderDomain(from)).toThrow(/no usable domain/);
    }
    expect(() => confirmationMessageId(0, 'shop@example.com')).toThrow(/positive integer/);
    expect(() => confirmationMessageId(1.5, 'shop@example.com')).toThrow(/positive integer/);
  });
});
