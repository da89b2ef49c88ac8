import { readStripeObject } from '../../src/http/providers/stripe-objects';

// A Stripe object as a thin event's fetch returns it (src/activities/stripe-api-activities.ts),
// read the way the webhook reads a snapshot event's data.object, except for one thing: an object
// of the wrong shape was fetched by us, not sent, so it is kept as unmatched instead of a 400.

const paymentIntent = {
  id: 'pi_1',
  object: 'payment_intent',
  amount: 6000,
  amount_received: 5400,
  currency: 'JPY',
  metadata: { order_id: '12' },
};

describe('readStripeObject', () => {
  it('reads a fetched PaymentIntent as the payment it captured', () => {
    expect(readStripeObject('payment_intent.succeeded', paymentIntent)).toStrictEqual({
      kind: 'payment',
      type: 'payment_intent.succeeded',
      orderRef: 12,
      amount: 5400,
      currency: 'jpy',
      paymentRef: 'pi_1',
    });
  });

  it('reads a fetched refund and dispute as the webhook reads them', () => {
    expect(
      readStripeObject('refund.updated', {
        id: 're_1',
        payment_intent: 'pi_1',
        amount: 300,
        currency: 'jpy',
        status: 'succeeded',
      }),
    ).toStrictEqual({
      kind: 'refund',
      type: 'refund.updated',
      paymentRef: 'pi_1',
      refund: {
        kind: 'refund',
        refundId: 're_1',
        amount: 300,
        currency: 'jpy',
        status: 'succeeded',
      },
    });
    expect(
      readStripeObject('charge.dispute.closed', {
        id: 'dp_1',
        payment_intent: { id: 'pi_1' },
        amount: 5400,
        currency: 'jpy',
        status: 'lost',
      }),
    ).toStrictEqual({
      kind: 'dispute',
      type: 'charge.dispute.closed',
      paymentRef: 'pi_1',
      dispute: { disputeId: 'dp_1', amount: 5400, currency: 'jpy', status: 'lost' },
    });
  });

  it('ignores a type this shop does not act on, whatever the object', () => {
    expect(readStripeObject('customer.created', { id: 'cus_1' })).toStrictEqual({
      kind: 'ignored',
      type: 'customer.created',
    });
    // Not a type, though it is a property of every object: no reader is found on the prototype.
    expect(readStripeObject('toString', {})).toStrictEqual({ kind: 'ignored', type: 'toString' });
  });

  it('keeps an object it cannot read as unmatched, naming each field that failed', () => {
    const object = { id: 'pi_1', amount_received: -5, currency: 'JPYX', metadata: {} };
    expect(readStripeObject('payment_intent.succeeded', object)).toStrictEqual({
      kind: 'unmatched',
      type: 'payment_intent.succeeded',
      reason: 'thin_unresolved',
      note: expect.stringMatching(
        /^the payment_intent\.succeeded object could not be read: amount_received: .+; currency: must be a three-letter ISO 4217 currency code$/,
      ) as unknown,
      object,
    });
    expect(readStripeObject('charge.refunded', null)).toMatchObject({
      kind: 'unmatched',
      reason: 'thin_unresolved',
      note: expect.stringMatching(/^the charge\.refunded object could not be read: : /) as unknown,
      object: null,
    });
  });

  it('keeps a fetched amount no order can have as unmatched, not as a failure', () => {
    expect(
      readStripeObject('payment_intent.succeeded', {
        ...paymentIntent,
        amount_received: 2_147_483_648,
      }),
    ).toMatchObject({ kind: 'unmatched', reason: 'amount_mismatch' });
  });
});

describe('readStripeObject: the columns’ range, per object type', () => {
  const tooLarge = 2_147_483_648;
  // Each object has only the fields its reader keeps, so the object kept is the one sent.
  const order = { currency: 'jpy', metadata: { order_id: '12' } };
  const onCharge = { payment_intent: 'pi_1', charge: 'ch_1', currency: 'jpy' };
  const intent = (n: number) => ({ id: 'pi_1', amount_received: n, ...order });
  const charge = (n: number) => ({
    id: 'ch_1',
    payment_intent: 'pi_1',
    amount_refunded: n,
    ...order,
  });
  const refund = (n: number) => ({
    id: 're_1',
    ...onCharge,
    amount: n,
    status: 'succeeded',
    ...order,
  });
  const dispute = (n: number) => ({ id: 'dp_1', ...onCharge, amount: n, status: 'needs_response' });
  const objects: Array<[string, (amount: number) => object, string]> = [
    ['payment_intent.succeeded', intent, 'payment'],
    ['charge.refunded', charge, 'refund'],
    ['refund.created', refund, 'refund'],
    ['refund.updated', refund, 'refund'],
    ['charge.dispute.created', dispute, 'dispute'],
    ['charge.dispute.closed', dispute, 'dispute'],
  ];

  it.each(objects)('keeps a %s past 2147483647 as unmatched, saying why', (type, object) => {
    expect(readStripeObject(type, object(tooLarge))).toStrictEqual({
      kind: 'unmatched',
      type,
      reason: 'amount_mismatch',
      note: "amount 2147483648 cannot be an order's (1 to 2147483647 in the smallest unit)",
      object: object(tooLarge),
    });
  });

  it.each(objects)(
    'takes a %s of exactly 2147483647, the most a column holds',
    (type, object, kind) => {
      expect(readStripeObject(type, object(2_147_483_647)).kind).toBe(kind);
    },
  );
});

describe('readStripeObject: an object it cannot read', () => {
  it('names each failing field by its whole path, the fields apart', () => {
    const object = { id: 're_1', amount: 0, currency: 'jpy', metadata: { order_id: 12 } };
    expect(readStripeObject('refund.created', object)).toStrictEqual({
      kind: 'unmatched',
      type: 'refund.created',
      reason: 'thin_unresolved',
      note:
        'the refund.created object could not be read: amount: Too small: expected number to be >0; ' +
        'metadata.order_id: Invalid input: expected string, received number',
      object,
    });
  });
});
