import { createOrdersRepository } from '../../src/db/repositories/orders';
import { createUnmatchedRepository } from '../../src/db/repositories/unmatched';
import {
  createPaymentsRepository,
  type RecordPaymentInput,
} from '../../src/db/repositories/payments';
import { testDatabases } from '../../harness/databases';
import { useTestDatabase } from '../support/database-fixture';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
// SQLite's "CHECK constraint failed: …", PostgreSQL's "… violates check constraint "…"".
const CHECK_VIOLATION = /check constraint/i;

describe.each(testDatabases)('payments repository ($name)', ({ create }) => {
  const database = useTestDatabase(create);
  const payments = database.repository(createPaymentsRepository);
  const nextEventId = () => database.unique('evt');
  const newOrder = (totalAmount = 5_400) => database.newOrder(totalAmount);
  const record = (
    providerEventId: string,
    orderId: number,
    amount = 5_400,
    more: Partial<RecordPaymentInput> = {},
  ) => payments.recordPayment({ providerEventId, orderId, amount, ...more });

  it('records a new event as created and marks its order paid', async () => {
    const order = await newOrder();
    const eventId = nextEventId();

    const result = await record(eventId, order.id);

    expect(result).toEqual({
      kind: 'created',
      firstForOrder: true,
      amountMatchesOrder: true,
      // No dispute of its payment reference was recorded before it.
      disputed: false,
      payment: {
        id: expect.any(Number),
        orderId: order.id,
        providerEventId: eventId,
        amount: 5_400,
        createdAt: expect.stringMatching(ISO_UTC),
        updatedAt: expect.stringMatching(ISO_UTC),
      },
    });
    const paidOrder = await createOrdersRepository(database.handle.db).findById(order.id);
    expect(paidOrder?.status).toBe('paid');
    expect(Date.parse(paidOrder!.updatedAt)).toBeGreaterThanOrEqual(Date.parse(order.updatedAt));
  });

  it('claims the order for the first payment only: a second, different event is a double charge', async () => {
    const order = await newOrder();
    const eventId = nextEventId();
    const first = await record(`${eventId}_a`, order.id);
    const second = await record(`${eventId}_b`, order.id);
    expect(first).toMatchObject({ kind: 'created', firstForOrder: true });
    expect(second).toMatchObject({
      kind: 'created',
      firstForOrder: false,
      amountMatchesOrder: true,
    });
    expect(await payments.listByOrder(order.id)).toHaveLength(2);
  });

  it('records a payment that is not the order total without paying the order; the right amount then does', async () => {
    const order = await newOrder(5_400);
    const eventId = nextEventId();
    const orders = createOrdersRepository(database.handle.db);

    const paysNot = { kind: 'created', firstForOrder: false, amountMatchesOrder: false };

    // Short of the total, then over it.
    for (const amount of [1, 5_401]) {
      expect(await record(`${eventId}_${amount}`, order.id, amount)).toMatchObject(paysNot);
      expect((await orders.findById(order.id))?.status).toBe('pending');
    }

    const exact = await record(`${eventId}_exact`, order.id);
    expect(exact).toMatchObject({ kind: 'created', firstForOrder: true, amountMatchesOrder: true });
    expect((await orders.findById(order.id))?.status).toBe('paid');
    expect(await payments.listByOrder(order.id)).toHaveLength(3);

    // A retry of the short payment's run still says it did not match.
    const retried = await record(`${eventId}_retry`, order.id, 2, { recordedByRunId: 'run-short' });
    const again = await record(`${eventId}_retry`, order.id, 2, { recordedByRunId: 'run-short' });
    expect(retried).toMatchObject({ kind: 'created', amountMatchesOrder: false });
    expect(again).toMatchObject(paysNot);
  });

  it('gives the order to exactly one of many different payments recorded at once', async () => {
    const order = await newOrder();
    const eventId = nextEventId();
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => record(`${eventId}_${i}`, order.id)),
    );
    const firsts = results.filter((r) => r.kind === 'created' && r.firstForOrder);
    expect(results.every((r) => r.kind === 'created')).toBe(true);
    expect(firsts).toHaveLength(1);
  });

  it('gives a retry of the same workflow run its own row back, with the same claim on the order', async () => {
    const order = await newOrder();
    const eventId = nextEventId();
    const input = { providerEventId: eventId, orderId: order.id, amount: 5_400 };
    // Attempt 1 commits and dies before reporting; attempt 2 of the same run comes back.
    const first = await payments.recordPayment({ ...input, recordedByRunId: 'run-1' });
    const retry = await payments.recordPayment({ ...input, recordedByRunId: 'run-1' });
    const otherRun = await payments.recordPayment({ ...input, recordedByRunId: 'run-2' });
    expect(first).toMatchObject({ kind: 'created', firstForOrder: true, amountMatchesOrder: true });
    expect(retry).toMatchObject({ kind: 'created', firstForOrder: true, amountMatchesOrder: true });
    expect(otherRun).toMatchObject({ kind: 'existing' });
    expect(await payments.listByOrder(order.id)).toHaveLength(1);

    // A second full payment (a double charge) retried by its run: not first, and still the total.
    const double = { providerEventId: nextEventId(), orderId: order.id, amount: 5_400 };
    await payments.recordPayment({ ...double, recordedByRunId: 'run-3' });
    expect(await payments.recordPayment({ ...double, recordedByRunId: 'run-3' })).toMatchObject({
      kind: 'created',
      firstForOrder: false,
      amountMatchesOrder: true,
    });
    // A call that names no run never takes a row as its own.
    expect(await payments.recordPayment(double)).toMatchObject({ kind: 'existing' });
  });

  it('lets a database failure through instead of calling it a missing order', async () => {
    const order = await newOrder();
    // A violated CHECK (amount >= 0) carries an error code too, but not the foreign key's: it
    // must not read as order_not_found, which fails the payment for good. Nothing is written,
    // neither the payment nor an unmatched entry.
    const eventId = nextEventId();
    await expect(record(eventId, order.id, -1)).rejects.toThrow(CHECK_VIOLATION);
    expect(await payments.countByEventId(eventId)).toBe(0);
    expect(await database.repository(createUnmatchedRepository).findByEventId(eventId)).toBe(
      undefined,
    );
    const broken = await create();
    await broken.close();
    await expect(
      createPaymentsRepository(broken.db).recordPayment({
        providerEventId: nextEventId(),
        orderId: order.id,
        amount: 5_400,
      }),
    ).rejects.toThrow();
  });

  it('returns the recorded payment as existing when the same event comes again', async () => {
    const order = await newOrder();
    const input = { providerEventId: nextEventId(), orderId: order.id, amount: 5_400 };
    const first = await payments.recordPayment(input);

    const again = await payments.recordPayment(input);

    expect(again.kind).toBe('existing');
    // With what the first recording decided, read back from the row, not from this call.
    expect(again).toEqual({
      kind: 'existing',
      payment: (first as { payment: unknown }).payment,
      firstForOrder: true,
      amountMatchesOrder: true,
      disputed: false,
    });
    expect(await payments.countByEventId(input.providerEventId)).toBe(1);
  });

  it('reads back a double charge as such when it comes again', async () => {
    const order = await newOrder();
    await record(nextEventId(), order.id);
    const double = { providerEventId: nextEventId(), orderId: order.id, amount: 5_400 };
    await payments.recordPayment(double);
    expect(await payments.recordPayment(double)).toMatchObject({
      kind: 'existing',
      firstForOrder: false,
      amountMatchesOrder: true,
    });
  });

  it('keeps the first order workflow chain that finished with an event', async () => {
    const order = await newOrder();
    const eventId = nextEventId();
    expect(await payments.handledBy(eventId)).toBeUndefined();
    await record(eventId, order.id);
    expect(await payments.handledBy(eventId)).toBeNull();

    const [recorded] = await payments.listByOrder(order.id);
    // The stamp is a change of the payment's row: its updated_at moves (once, with the stamp).
    await new Promise((resolve) => setTimeout(resolve, 5));
    await payments.markHandled(eventId, 'chain-1');
    const [stamped] = await payments.listByOrder(order.id);
    expect(Date.parse(stamped!.updatedAt)).toBeGreaterThan(Date.parse(recorded!.updatedAt));
    await new Promise((resolve) => setTimeout(resolve, 5));
    await payments.markHandled(eventId, 'chain-2');
    expect(await payments.handledBy(eventId)).toBe('chain-1');
    expect(await payments.listByOrder(order.id)).toEqual([stamped]);
  });

  it('reports a conflict, and writes nothing, when the event ID comes with another amount or order', async () => {
    const order = await newOrder();
    const otherOrder = await newOrder();
    const eventId = nextEventId();
    const first = await record(eventId, order.id);
    if (first.kind !== 'created') throw new Error(`expected created, got ${first.kind}`);

    const otherAmount = await record(eventId, order.id, 1);
    const otherOrderResult = await record(eventId, otherOrder.id);
    const missingOrder = await record(eventId, 999_999);

    for (const result of [otherAmount, otherOrderResult, missingOrder]) {
      expect(result).toEqual({ kind: 'conflict', payment: first.payment });
    }
    expect(await payments.listByOrder(otherOrder.id)).toEqual([]);
    expect((await createOrdersRepository(database.handle.db).findById(otherOrder.id))?.status).toBe(
      'pending',
    );
  });

  it('keeps a payment for an unknown order in the unmatched inbox, in its transaction, and writes no payment', async () => {
    const eventId = nextEventId();

    const kept = await payments.recordPayment({
      providerEventId: eventId,
      orderId: 999_999,
      amount: 10,
      recordedByRunId: 'run-a',
    });

    expect(kept).toEqual({ kind: 'unknown_order', unmatchedId: expect.any(Number), created: true });
    expect(await payments.countByEventId(eventId)).toBe(0);
    const entry = await createUnmatchedRepository(database.handle.db).findByEventId(eventId);
    expect(entry).toMatchObject({
      id: kept.kind === 'unknown_order' ? kept.unmatchedId : -1,
      reason: 'unknown_order',
      provider: 'payment',
      // What `unmatched attach` pays the order with; the reference refunds will name.
      payload: { eventId, orderId: 999_999, amount: 10, paymentRef: eventId },
      deliveryCount: 1,
      resolution: null,
    });
    // Only a non-empty prefix before `~` names a provider.
    const unqualified = `~${nextEventId()}`;
    await record(unqualified, 999_999, 10);
    expect(
      await createUnmatchedRepository(database.handle.db).findByEventId(unqualified),
    ).toMatchObject({ provider: 'payment' });
  });

  it('tells the same run created again without counting, and counts another run as a delivery', async () => {
    const eventId = `stripe~${nextEventId()}`;
    const input = {
      providerEventId: eventId,
      orderId: 999_998,
      amount: 1200,
      paymentRef: 'stripe~pi_1',
      currency: 'jpy',
      recordedByRunId: 'run-a',
    };

    const first = await payments.recordPayment(input);
    // The step retried after a crash that followed the commit: the same delivery.
    const retried = await payments.recordPayment(input);
    // A redelivery the server no longer dedups (another run of payment-<event id>).
    const redelivered = await payments.recordPayment({ ...input, recordedByRunId: 'run-b' });

    expect(retried).toEqual(first);
    expect(first).toMatchObject({ kind: 'unknown_order', created: true });
    expect(redelivered).toMatchObject({ kind: 'unknown_order', created: false });
    const entry = await createUnmatchedRepository(database.handle.db).findByEventId(eventId);
    expect(entry).toMatchObject({
      provider: 'stripe',
      payload: { amount: 1200, paymentRef: 'stripe~pi_1', currency: 'jpy' },
      deliveryCount: 2,
    });
  });

  it('keeps an event unmatched once kept, even when its order is created afterwards: never a payment as well', async () => {
    const eventId = nextEventId();
    const laterOrderId = (await newOrder()).id + 1;
    const input = { providerEventId: eventId, orderId: laterOrderId, amount: 5_400 };
    const kept = await payments.recordPayment({ ...input, recordedByRunId: 'run-a' });
    const order = await newOrder();
    expect(order.id).toBe(laterOrderId);

    // The retry of the attempt that kept it, or a redelivery: an operator attaches the entry.
    const again = await payments.recordPayment({ ...input, recordedByRunId: 'run-a' });
    const redelivered = await payments.recordPayment({ ...input, recordedByRunId: 'run-b' });

    expect(again).toEqual(kept);
    expect(redelivered).toMatchObject({ kind: 'unknown_order', created: false });
    expect(await payments.countByEventId(eventId)).toBe(0);
    expect((await createOrdersRepository(database.handle.db).findById(order.id))?.status).toBe(
      'pending',
    );

    // Attached by an operator (paid under its own event ID): a later run still pays nothing.
    const inbox = createUnmatchedRepository(database.handle.db);
    const id = kept.kind === 'unknown_order' ? kept.unmatchedId : -1;
    expect((await inbox.resolve(id, { kind: 'attached', orderId: order.id })).kind).toBe(
      'resolved',
    );
    const afterAttach = await payments.recordPayment({ ...input, recordedByRunId: 'run-c' });
    expect(afterAttach).toEqual({ kind: 'unknown_order', unmatchedId: id, created: false });
    expect(await payments.countByEventId(eventId)).toBe(0);
    expect(await inbox.get(id)).toMatchObject({
      deliveryCount: 3,
      resolution: { kind: 'attached' },
    });
  });

  it('lets concurrent calls for an unknown order agree on one entry and one creator', async () => {
    const eventId = nextEventId();
    const results = await Promise.all(
      Array.from({ length: 8 }, (_, i) =>
        payments.recordPayment({
          providerEventId: eventId,
          orderId: 999_997,
          amount: 10,
          recordedByRunId: `run-${i}`,
        }),
      ),
    );
    expect(results.filter((r) => r.kind === 'unknown_order' && r.created)).toHaveLength(1);
    expect(
      await createUnmatchedRepository(database.handle.db).findByEventId(eventId),
    ).toMatchObject({
      deliveryCount: 8,
    });
    expect(await payments.countByEventId(eventId)).toBe(0);
  });

  it('gives exactly one of 50 concurrent calls for one event the created result, through several handles', async () => {
    const order = await newOrder();
    const input = { providerEventId: nextEventId(), orderId: order.id, amount: 5_400 };
    const results = await database.acrossHandles(createPaymentsRepository, 50, (repository) =>
      repository.recordPayment(input),
    );

    const kinds = results.map((r) => r.kind);
    expect(kinds.filter((k) => k === 'created')).toHaveLength(1);
    expect(kinds.filter((k) => k === 'existing')).toHaveLength(49);
    const ids = new Set(results.map((r) => ('payment' in r ? r.payment.id : undefined)));
    expect(ids.size).toBe(1);
    expect(await payments.countByEventId(input.providerEventId)).toBe(1);
  });

  it('lists the payments of an order oldest first, and only those', async () => {
    const order = await newOrder();
    const unrelated = await newOrder();
    const first = nextEventId();
    const second = nextEventId();
    await record(first, order.id, 100);
    await record(nextEventId(), unrelated.id, 100);
    await record(second, order.id, 200);

    const listed = await payments.listByOrder(order.id);

    expect(listed.map((p) => [p.providerEventId, p.amount])).toEqual([
      [first, 100],
      [second, 200],
    ]);
    expect(await payments.listByOrder(999_999)).toEqual([]);
  });
});
