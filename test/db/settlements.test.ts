import { createOrdersRepository } from '../../src/db/repositories/orders';
import { createSettlementsRepository } from '../../src/db/repositories/settlements';
import { testDatabases } from '../../harness/databases';
import { useTestDatabase } from '../support/database-fixture';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

// An operator's settlement of a pending order (`ops settle`): once, and never beside a payment
// that pays the order by itself.
describe.each(testDatabases)('settlements repository ($name)', ({ create }) => {
  const database = useTestDatabase(create);
  const settlements = database.repository(createSettlementsRepository);
  const who = { settledBy: 'ops@example.com', reason: 'paid short by the bank fee' };
  const newOrder = async (totalAmount = 5_000) => (await database.newOrder(totalAmount)).id;

  async function pay(orderId: number, amount: number): Promise<number> {
    const result = await database.pay(orderId, { amount });
    if (result.kind !== 'created') throw new Error(`payment not created: ${result.kind}`);
    return result.payment.id;
  }

  const order = (id: number) => createOrdersRepository(database.handle.db).findById(id);

  it('pays a pending order with its short and split payments, and records who, why, when and which', async () => {
    const orderId = await newOrder(5_000);
    const first = await pay(orderId, 3_000);
    const second = await pay(orderId, 1_900);
    const before = await order(orderId);
    expect(before?.status).toBe('pending');

    const result = await settlements.settle({ orderId, ...who });

    expect(result).toEqual({
      kind: 'settled',
      paidAmount: 4_900,
      settlement: {
        orderId,
        settledBy: who.settledBy,
        reason: who.reason,
        settledAt: expect.stringMatching(ISO_UTC),
        paymentIds: [first, second],
      },
    });
    const after = await order(orderId);
    expect(after).toMatchObject({
      status: 'paid',
      settlement: result.kind === 'settled' && result.settlement,
    });
    expect(after!.updatedAt).toBe(result.kind === 'settled' && result.settlement.settledAt);
    expect(Date.parse(after!.updatedAt)).toBeGreaterThanOrEqual(Date.parse(before!.updatedAt));
    expect(await settlements.find(orderId)).toEqual(
      result.kind === 'settled' ? result.settlement : undefined,
    );
  });

  it('settles an order once: a second run, or another operator, gets the first settlement back', async () => {
    const orderId = await newOrder();
    await pay(orderId, 10);
    const first = await settlements.settle({ orderId, ...who });
    const again = await settlements.settle({ orderId, settledBy: 'other', reason: 'again' });

    expect(first.kind).toBe('settled');
    expect(again).toEqual({
      kind: 'already_settled',
      settlement: first.kind === 'settled' ? first.settlement : undefined,
    });
  });

  it('lets exactly one of several settlements at once settle the order', async () => {
    const orderId = await newOrder();
    await pay(orderId, 10);
    const results = await Promise.all(
      Array.from({ length: 5 }, (_, i) =>
        settlements.settle({ orderId, settledBy: `op${i}`, reason: 'race' }),
      ),
    );
    expect(results.filter((r) => r.kind === 'settled')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'already_settled')).toHaveLength(4);
  });

  it('refuses an order that does not exist, writing nothing', async () => {
    expect(await settlements.settle({ orderId: 987_654, ...who })).toEqual({
      kind: 'refused',
      why: 'order_not_found',
    });
    expect(await settlements.find(987_654)).toBeUndefined();
  });

  it('refuses an order its payment already paid: a settlement never pays an order twice', async () => {
    const orderId = await newOrder(5_000);
    await pay(orderId, 5_000);
    expect(await settlements.settle({ orderId, ...who })).toEqual({
      kind: 'refused',
      why: 'already_paid',
    });
    expect(await settlements.find(orderId)).toBeUndefined();
    expect((await order(orderId))?.settlement).toBeNull();
  });

  it('refuses a pending order with no payment to settle with', async () => {
    const orderId = await newOrder();
    // Another order's payment does not count.
    await pay(await newOrder(), 10);
    expect(await settlements.settle({ orderId, ...who })).toEqual({
      kind: 'refused',
      why: 'no_payment',
    });
    expect((await order(orderId))?.status).toBe('pending');
  });

  it('refuses a pending order whose payment was refunded, even in part', async () => {
    const orderId = await newOrder();
    await pay(orderId, 3_000);
    await createOrdersRepository(database.handle.db).setRefundedAmount(orderId, 1);
    expect(await settlements.settle({ orderId, ...who })).toEqual({
      kind: 'refused',
      why: 'refunded',
    });
    expect((await order(orderId))?.status).toBe('pending');
    expect(await settlements.find(orderId)).toBeUndefined();
  });

  it('leaves a settled order to the settlement when its right payment comes afterwards', async () => {
    const orderId = await newOrder(5_000);
    await pay(orderId, 100);
    await settlements.settle({ orderId, ...who });
    const late = await database.pay(orderId, { amount: 5_000 });
    // Not the first payment: the order was paid by the settlement (a refund review follows).
    expect(late).toMatchObject({ kind: 'created', firstForOrder: false });
  });

  it('keeps the first order workflow chain that finished with the settlement', async () => {
    const orderId = await newOrder();
    await pay(orderId, 10);
    expect(await settlements.handledBy(orderId)).toBeUndefined();
    await settlements.settle({ orderId, ...who });

    expect(await settlements.handledBy(orderId)).toBeNull();
    await settlements.markHandled(orderId, 'chain-1');
    await settlements.markHandled(orderId, 'chain-2');
    expect(await settlements.handledBy(orderId)).toBe('chain-1');
  });
});
