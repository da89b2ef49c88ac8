import {
  createDisputesRepository,
  type DisputesRepository,
} from '../../src/db/repositories/disputes';
import { createOrdersRepository } from '../../src/db/repositories/orders';
import { createPaymentsRepository } from '../../src/db/repositories/payments';
import type { DisputeEvent } from '../../src/shared/payment-events';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

// The disputes' event ledger: one row per provider event, matched to its order as a refund is;
// an opening and a closure are separate events, recorded in whatever order they come.
describe.each(testDatabases)('disputes repository ($name)', ({ create }) => {
  let handle: TestDatabaseHandle;
  let disputes: DisputesRepository;
  let seq = 0;
  const unique = (prefix: string) => `${prefix}_${++seq}`;

  beforeAll(async () => {
    handle = await create();
    disputes = createDisputesRepository(handle.db);
  });
  afterAll(() => handle?.close());

  async function newOrder(): Promise<number> {
    const { order } = await createOrdersRepository(handle.db).createWithIdempotencyKey({
      userId: 4,
      customerEmail: 'buyer@example.com',
      totalAmount: 5_000,
    });
    return order.id;
  }

  async function pay(orderId: number, paymentRef: string) {
    return createPaymentsRepository(handle.db).recordPayment({
      providerEventId: unique('evt_pay'),
      orderId,
      amount: 5_000,
      paymentRef,
    });
  }

  function disputeEvent(paymentRef: string, overrides: Partial<DisputeEvent> = {}): DisputeEvent {
    return {
      eventId: unique('stripe~evt_dp'),
      paymentRef,
      disputeId: unique('dp'),
      amount: 5_000,
      currency: 'jpy',
      status: 'opened',
      evidenceDueBy: '2026-12-24T00:00:00.000Z',
      reason: 'fraudulent',
      ...overrides,
    };
  }

  /** The stored row, for the columns no read of the repository returns. */
  function row(eventId: string) {
    return handle.db
      .selectFrom('disputes')
      .selectAll()
      .where('provider_event_id', '=', eventId)
      .executeTakeFirstOrThrow();
  }

  it('records an event for a recorded payment once, matched to its order, with every field', async () => {
    const orderId = await newOrder();
    const ref = unique('stripe~pi');
    await pay(orderId, ref);
    const event = disputeEvent(ref, { disputeId: 'dp_1', amount: 4_321 });

    expect(await disputes.record(event)).toEqual({ created: true, orderId });
    expect(await disputes.forOrder(orderId)).toEqual([
      { disputeId: 'dp_1', status: 'opened', recordedAt: expect.stringMatching(ISO_UTC) },
    ]);
    expect(await row(event.eventId)).toMatchObject({
      dispute_id: 'dp_1',
      payment_ref: ref,
      status: 'opened',
      amount: 4_321,
      currency: 'jpy',
      evidence_due_by: '2026-12-24T00:00:00.000Z',
      reason: 'fraudulent',
      order_id: orderId,
      handled_by_chain: null,
    });
  });

  it('stores the optional fields a provider left out as NULL', async () => {
    const event = disputeEvent(unique('stripe~pi'), {
      currency: undefined,
      evidenceDueBy: undefined,
      reason: undefined,
    });
    await disputes.record(event);
    expect(await row(event.eventId)).toMatchObject({
      currency: null,
      evidence_due_by: null,
      reason: null,
    });
  });

  it('answers a redelivery (or a retry) with created false and keeps the first recording', async () => {
    const orderId = await newOrder();
    const ref = unique('stripe~pi');
    await pay(orderId, ref);
    const event = disputeEvent(ref);

    expect(await disputes.record(event)).toEqual({ created: true, orderId });
    expect(await disputes.record({ ...event, status: 'lost' })).toEqual({
      created: false,
      orderId,
    });
    expect((await disputes.forOrder(orderId)).map((d) => d.status)).toEqual(['opened']);
  });

  it('keeps only one creator when the same event is recorded by several calls at once', async () => {
    const event = disputeEvent(unique('stripe~pi'));
    const results = await Promise.all(Array.from({ length: 6 }, () => disputes.record(event)));
    expect(results.filter((r) => r.created)).toHaveLength(1);
  });

  it('records a closure that comes before the opening, and both before the payment, for its order', async () => {
    const orderId = await newOrder();
    const ref = unique('stripe~pi');
    const won = disputeEvent(ref, { disputeId: 'dp_any', status: 'won' });
    const opened = disputeEvent(ref, { disputeId: 'dp_any', status: 'opened' });

    expect(await disputes.record(won)).toEqual({ created: true, orderId: null });
    expect(await disputes.record(opened)).toEqual({ created: true, orderId: null });
    expect(await disputes.forOrder(orderId)).toEqual([]);

    // The payment claims both, and learns that it is disputed.
    expect(await pay(orderId, ref)).toMatchObject({ kind: 'created', disputed: true });
    expect((await disputes.forOrder(orderId)).map((d) => [d.disputeId, d.status])).toEqual([
      ['dp_any', 'won'],
      ['dp_any', 'opened'],
    ]);
    expect(await disputes.record(won)).toEqual({ created: false, orderId });
  });

  it('matches a redelivery that comes after the payment, when the first recording found none', async () => {
    const orderId = await newOrder();
    const ref = unique('stripe~pi');
    const event = disputeEvent(ref);
    await disputes.record(event);
    // A payment row written without its claim of parked disputes: only the redelivery matches.
    const now = new Date().toISOString();
    await handle.db
      .insertInto('payments')
      .values({
        order_id: orderId,
        provider_event_id: unique('evt_raw'),
        amount: 5_000,
        provider_payment_ref: ref,
        created_at: now,
        updated_at: now,
      })
      .execute();

    expect(await disputes.record(event)).toEqual({ created: false, orderId });
    expect(await disputes.forOrder(orderId)).toHaveLength(1);
  });

  it("matches by the payment's reference first, then by the order the event names, if it exists", async () => {
    const paidOrder = await newOrder();
    const namedOrder = await newOrder();
    const ref = unique('stripe~pi');
    await pay(paidOrder, ref);

    expect(await disputes.record(disputeEvent(ref, { orderId: namedOrder }))).toMatchObject({
      orderId: paidOrder,
    });
    expect(
      await disputes.record(disputeEvent(unique('stripe~pi'), { orderId: namedOrder })),
    ).toEqual({ created: true, orderId: namedOrder });
    expect(await disputes.record(disputeEvent(unique('stripe~pi'), { orderId: 987_654 }))).toEqual({
      created: true,
      orderId: null,
    });
    expect(await disputes.forOrder(namedOrder)).toHaveLength(1);
    expect(await disputes.forOrder(paidOrder)).toHaveLength(1);
  });

  it('never moves a dispute from the order it was matched to', async () => {
    const first = await newOrder();
    const second = await newOrder();
    const event = disputeEvent(unique('stripe~pi'), { orderId: first });
    await disputes.record(event);

    expect(await disputes.record({ ...event, orderId: second })).toEqual({
      created: false,
      orderId: first,
    });
    expect(await disputes.forOrder(second)).toEqual([]);
  });

  it("lists an order's dispute events oldest first, with when each was recorded, and only its own", async () => {
    const orderId = await newOrder();
    const other = await newOrder();
    const ref = unique('stripe~pi');
    await pay(orderId, ref);
    await pay(other, unique('stripe~pi'));
    await disputes.record(disputeEvent(ref, { disputeId: 'dp_a', status: 'opened' }));
    await disputes.record(disputeEvent(ref, { disputeId: 'dp_b', status: 'opened' }));
    await disputes.record(disputeEvent(ref, { disputeId: 'dp_a', status: 'lost' }));

    const listed = await disputes.forOrder(orderId);
    expect(listed.map((d) => [d.disputeId, d.status])).toEqual([
      ['dp_a', 'opened'],
      ['dp_b', 'opened'],
      ['dp_a', 'lost'],
    ]);
    const times = listed.map((d) => d.recordedAt);
    expect(times).toEqual([...times].sort());
    expect(await disputes.forOrder(other)).toEqual([]);
  });

  it('keeps the first order workflow chain that finished with an event', async () => {
    const event = disputeEvent(unique('stripe~pi'));
    await disputes.record(event);

    expect(await disputes.handledBy(event.eventId)).toBeNull();
    await disputes.markHandled(event.eventId, 'chain-1');
    await disputes.markHandled(event.eventId, 'chain-2');
    expect(await disputes.handledBy(event.eventId)).toBe('chain-1');
    expect(await disputes.handledBy('stripe~evt_never_recorded')).toBeUndefined();
  });
});
