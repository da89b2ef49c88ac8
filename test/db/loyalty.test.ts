import { createLoyaltyRepository } from '../../src/db/repositories/loyalty';
import { createOrdersRepository } from '../../src/db/repositories/orders';
import { testDatabases } from '../../harness/databases';
import { useTestDatabase } from '../support/database-fixture';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const REASON = 'order_confirmed';

// Matched by message. (Written when toThrow failed on SQLite's errors in any test file after the
// first of its jest worker; test/support/sqlite-errors.ts makes them this file's Errors now.)
const failure = (message: RegExp) => ({ message: expect.stringMatching(message) });

describe.each(testDatabases)('loyalty repository ($name)', ({ create }) => {
  const database = useTestDatabase(create);
  const loyalty = database.repository(createLoyaltyRepository);
  // Every test gets users of its own, so balances never mix.
  let userSeq = 1_000;
  const nextUser = () => ++userSeq;

  async function newOrderId(userId: number): Promise<number> {
    const { order } = await createOrdersRepository(database.handle.db).createWithIdempotencyKey({
      userId,
      customerEmail: 'buyer@example.com',
      totalAmount: 5_400,
    });
    return order.id;
  }

  it('awards the points of an order once: balance 100, one ledger row', async () => {
    const userId = nextUser();
    const orderId = await newOrderId(userId);

    const result = await loyalty.awardForOrder({ userId, orderId, points: 100, reason: REASON });

    expect(result).toEqual({ awarded: true, balance: 100 });
    expect(await loyalty.balanceOf(userId)).toBe(100);
    expect(await loyalty.ledgerFor(userId)).toEqual([
      {
        id: expect.any(Number),
        userId,
        orderId,
        points: 100,
        reason: REASON,
        createdAt: expect.stringMatching(ISO_UTC),
      },
    ]);
  });

  it('does nothing when the same order is awarded again, and reports the unchanged balance', async () => {
    const userId = nextUser();
    const input = { userId, orderId: await newOrderId(userId), points: 100, reason: REASON };
    await loyalty.awardForOrder(input);

    const again = await loyalty.awardForOrder(input);

    expect(again).toEqual({ awarded: false, balance: 100 });
    expect(await loyalty.balanceOf(userId)).toBe(100);
    expect(await loyalty.ledgerFor(userId)).toHaveLength(1);
  });

  it('gives exactly one of 20 concurrent awards for one order the points, through several handles', async () => {
    const userId = nextUser();
    const input = { userId, orderId: await newOrderId(userId), points: 100, reason: REASON };
    const results = await database.acrossHandles(createLoyaltyRepository, 20, (repository) =>
      repository.awardForOrder(input),
    );

    expect(results.filter((r) => r.awarded)).toHaveLength(1);
    // The losers waited for the winner and read its balance, not a stale zero.
    expect(results.map((r) => r.balance)).toEqual(Array(20).fill(100));
    expect(await loyalty.ledgerFor(userId)).toHaveLength(1);
    expect(await loyalty.balanceOf(userId)).toBe(100);
  });

  it('adds up the awards of two orders of one user: 200', async () => {
    const userId = nextUser();
    const first = await newOrderId(userId);
    const second = await newOrderId(userId);

    await loyalty.awardForOrder({ userId, orderId: first, points: 100, reason: REASON });
    const result = await loyalty.awardForOrder({
      userId,
      orderId: second,
      points: 100,
      reason: REASON,
    });

    expect(result).toEqual({ awarded: true, balance: 200 });
    expect((await loyalty.ledgerFor(userId)).map((e) => e.orderId)).toEqual([first, second]);
  });

  it('loses no increment when different orders of one user are awarded at the same moment', async () => {
    const userId = nextUser();
    const orderIds = await Promise.all(Array.from({ length: 10 }, () => newOrderId(userId)));
    const results = await database.acrossHandles(createLoyaltyRepository, 10, (repository, i) =>
      repository.awardForOrder({ userId, orderId: orderIds[i]!, points: 100, reason: REASON }),
    );

    expect(results.every((r) => r.awarded)).toBe(true);
    expect(results.map((r) => r.balance).sort((a, b) => a - b)).toEqual(
      orderIds.map((_, i) => (i + 1) * 100),
    );
    expect(await loyalty.balanceOf(userId)).toBe(1_000);
  });

  it('awards one order once per reason', async () => {
    const userId = nextUser();
    const orderId = await newOrderId(userId);

    await loyalty.awardForOrder({ userId, orderId, points: 100, reason: REASON });
    const bonus = await loyalty.awardForOrder({ userId, orderId, points: 50, reason: 'campaign' });

    expect(bonus).toEqual({ awarded: true, balance: 150 });
  });

  it('writes the ledger row and the balance in one transaction: a refused balance change leaves no row', async () => {
    const userId = nextUser();
    const earned = await newOrderId(userId);
    const refunded = await newOrderId(userId);
    await loyalty.awardForOrder({ userId, orderId: earned, points: 100, reason: REASON });

    // 100 - 500 would be negative: the CHECK on the balance refuses the update, after the
    // ledger row was inserted in the same transaction.
    await expect(
      loyalty.awardForOrder({ userId, orderId: refunded, points: -500, reason: 'refund' }),
    ).rejects.toMatchObject(failure(/check/i));

    expect(await loyalty.balanceOf(userId)).toBe(100);
    expect((await loyalty.ledgerFor(userId)).map((e) => e.orderId)).toEqual([earned]);
    // Nothing of the failed award remains to block a later, valid one under the same key.
    await expect(
      loyalty.awardForOrder({ userId, orderId: refunded, points: -100, reason: 'refund' }),
    ).resolves.toEqual({ awarded: true, balance: 0 });
  });

  it('refuses an award for an order that does not exist and writes nothing', async () => {
    const userId = nextUser();

    await expect(
      loyalty.awardForOrder({ userId, orderId: 987_654, points: 100, reason: REASON }),
    ).rejects.toMatchObject(failure(/foreign key/i));

    expect(await loyalty.balanceOf(userId)).toBe(0);
    expect(await loyalty.ledgerFor(userId)).toEqual([]);
  });

  it('reports 0 points and an empty ledger for a user who never earned any', async () => {
    const userId = nextUser();
    expect(await loyalty.balanceOf(userId)).toBe(0);
    expect(await loyalty.ledgerFor(userId)).toEqual([]);
  });
});
