import { createOrdersRepository } from '../../src/db/repositories/orders';
import { createPaymentsRepository } from '../../src/db/repositories/payments';
import { createRefundsRepository, type RefundsRepository } from '../../src/db/repositories/refunds';
import type { RefundEvent } from '../../src/shared/payment-events';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';

// The refunds' event ledger: one row per provider event, matched to its order through the
// payment's reference (or the order the event names), kept with no order until that payment.
describe.each(testDatabases)('refunds repository ($name)', ({ create }) => {
  let handle: TestDatabaseHandle;
  let refunds: RefundsRepository;
  let seq = 0;
  const unique = (prefix: string) => `${prefix}_${++seq}`;

  beforeAll(async () => {
    handle = await create();
    refunds = createRefundsRepository(handle.db);
  });
  afterAll(() => handle?.close());

  async function newOrder(totalAmount = 5_000): Promise<number> {
    const { order } = await createOrdersRepository(handle.db).createWithIdempotencyKey({
      userId: 3,
      customerEmail: 'buyer@example.com',
      totalAmount,
    });
    return order.id;
  }

  async function pay(orderId: number, paymentRef: string, amount = 5_000): Promise<void> {
    await createPaymentsRepository(handle.db).recordPayment({
      providerEventId: unique('evt_pay'),
      orderId,
      amount,
      paymentRef,
    });
  }

  function refundEvent(paymentRef: string, overrides: Partial<RefundEvent> = {}): RefundEvent {
    return {
      eventId: unique('stripe~evt_re'),
      paymentRef,
      kind: 'refund',
      refundId: unique('re'),
      amount: 1_200,
      currency: 'jpy',
      status: 'succeeded',
      ...overrides,
    };
  }

  /** The stored row, for the columns no read of the repository returns. */
  function row(eventId: string) {
    return handle.db
      .selectFrom('refunds')
      .selectAll()
      .where('provider_event_id', '=', eventId)
      .executeTakeFirstOrThrow();
  }

  it('records an event for a recorded payment once, matched to its order, with every field', async () => {
    const orderId = await newOrder();
    const ref = unique('stripe~pi');
    await pay(orderId, ref);
    const event = refundEvent(ref, { refundId: 're_full', amount: 4_999, status: 'pending' });

    expect(await refunds.record(event)).toEqual({ created: true, orderId });
    expect(await refunds.forOrder(orderId)).toEqual([
      { kind: 'refund', refundId: 're_full', amount: 4_999, status: 'pending' },
    ]);
    expect(await row(event.eventId)).toMatchObject({
      payment_ref: ref,
      kind: 'refund',
      refund_id: 're_full',
      currency: 'jpy',
      status: 'pending',
      order_id: orderId,
      handled_by_chain: null,
    });
  });

  it('answers a redelivery of the event (or a retry) with created false and keeps one row', async () => {
    const orderId = await newOrder();
    const ref = unique('stripe~pi');
    await pay(orderId, ref);
    const event = refundEvent(ref);

    const first = await refunds.record(event);
    // The same event ID with other content is still the same event: the first recording stands.
    const again = await refunds.record({ ...event, amount: 9, status: 'failed' });

    expect(first).toEqual({ created: true, orderId });
    expect(again).toEqual({ created: false, orderId });
    expect(await refunds.forOrder(orderId)).toEqual([
      { kind: 'refund', refundId: event.refundId, amount: 1_200, status: 'succeeded' },
    ]);
  });

  it('keeps only one creator when the same event is recorded by several calls at once', async () => {
    const orderId = await newOrder();
    const ref = unique('stripe~pi');
    await pay(orderId, ref);
    const event = refundEvent(ref);

    const results = await Promise.all(Array.from({ length: 6 }, () => refunds.record(event)));

    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(results.every((r) => r.orderId === orderId)).toBe(true);
    expect(await refunds.forOrder(orderId)).toHaveLength(1);
  });

  it('keeps a refund that comes before its payment with no order; the payment then claims it', async () => {
    const orderId = await newOrder();
    const ref = unique('stripe~pi');
    const early = refundEvent(ref, {
      kind: 'cumulative',
      refundId: undefined,
      currency: undefined,
    });

    expect(await refunds.record(early)).toEqual({ created: true, orderId: null });
    expect(await row(early.eventId)).toMatchObject({
      order_id: null,
      refund_id: null,
      currency: null,
    });
    expect(await refunds.forOrder(orderId)).toEqual([]);

    await pay(orderId, ref);
    expect(await refunds.forOrder(orderId)).toEqual([
      { kind: 'cumulative', refundId: null, amount: 1_200, status: 'succeeded' },
    ]);
    // A redelivery after the claim reads the order the payment gave it.
    expect(await refunds.record(early)).toEqual({ created: false, orderId });
  });

  it('matches a redelivery that comes after the payment, when the first recording found none', async () => {
    const orderId = await newOrder();
    const ref = unique('stripe~pi');
    const event = refundEvent(ref);
    await refunds.record(event);
    // The payment's own claim is skipped here (a raw insert, as a payment whose claim was lost
    // would be): only the refund's second recording can match it.
    await handle.db
      .insertInto('payments')
      .values({
        order_id: orderId,
        provider_event_id: unique('evt_raw'),
        amount: 5_000,
        provider_payment_ref: ref,
        created_at: new Date().toISOString(),
        updated_at: new Date().toISOString(),
      })
      .execute();

    expect(await refunds.record(event)).toEqual({ created: false, orderId });
    expect(await refunds.forOrder(orderId)).toHaveLength(1);
  });

  it("matches by the payment's reference first, then by the order the event names, if it exists", async () => {
    const paidOrder = await newOrder();
    const namedOrder = await newOrder();
    const ref = unique('stripe~pi');
    await pay(paidOrder, ref);

    // The payment decides, whatever order the metadata names.
    expect(await refunds.record(refundEvent(ref, { orderId: namedOrder }))).toMatchObject({
      orderId: paidOrder,
    });
    // No payment with the reference: the named order.
    expect(
      await refunds.record(refundEvent(unique('stripe~pi'), { orderId: namedOrder })),
    ).toMatchObject({ created: true, orderId: namedOrder });
    // A named order that does not exist: kept with no order (no foreign-key failure).
    expect(await refunds.record(refundEvent(unique('stripe~pi'), { orderId: 987_654 }))).toEqual({
      created: true,
      orderId: null,
    });
    expect(await refunds.forOrder(namedOrder)).toHaveLength(1);
    expect(await refunds.forOrder(paidOrder)).toHaveLength(1);
  });

  it('never moves a refund from the order it was matched to', async () => {
    const first = await newOrder();
    const second = await newOrder();
    const event = refundEvent(unique('stripe~pi'), { orderId: first });
    await refunds.record(event);

    expect(await refunds.record({ ...event, orderId: second })).toEqual({
      created: false,
      orderId: first,
    });
    expect(await refunds.forOrder(second)).toEqual([]);
  });

  it("lists an order's refund events oldest first, and only its own", async () => {
    const orderId = await newOrder();
    const other = await newOrder();
    const ref = unique('stripe~pi');
    await pay(orderId, ref);
    await pay(other, unique('stripe~pi'));
    const events = [
      refundEvent(ref, { refundId: 're_a', amount: 100, status: 'pending' }),
      refundEvent(ref, { refundId: 're_a', amount: 100, status: 'succeeded' }),
      refundEvent(ref, { kind: 'cumulative', refundId: undefined, amount: 300 }),
      refundEvent(ref, { refundId: 're_b', amount: 200, status: 'canceled' }),
    ];
    for (const event of events) await refunds.record(event);

    expect(await refunds.forOrder(orderId)).toEqual([
      { kind: 'refund', refundId: 're_a', amount: 100, status: 'pending' },
      { kind: 'refund', refundId: 're_a', amount: 100, status: 'succeeded' },
      { kind: 'cumulative', refundId: null, amount: 300, status: 'succeeded' },
      { kind: 'refund', refundId: 're_b', amount: 200, status: 'canceled' },
    ]);
    expect(await refunds.forOrder(other)).toEqual([]);
    expect((await refunds.forOrder(orderId)).every((r) => typeof r.amount === 'number')).toBe(true);
  });

  it('keeps the first order workflow chain that finished with an event', async () => {
    const event = refundEvent(unique('stripe~pi'));
    await refunds.record(event);

    expect(await refunds.handledBy(event.eventId)).toBeNull();
    await refunds.markHandled(event.eventId, 'chain-1');
    await refunds.markHandled(event.eventId, 'chain-2');
    expect(await refunds.handledBy(event.eventId)).toBe('chain-1');
    expect(await refunds.handledBy('stripe~evt_never_recorded')).toBeUndefined();
    // Marking an event that was never recorded writes nothing (and does not fail).
    await refunds.markHandled('stripe~evt_never_recorded', 'chain-1');
    expect(await refunds.handledBy('stripe~evt_never_recorded')).toBeUndefined();
  });
});
