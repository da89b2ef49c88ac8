import { ApplicationFailure } from '@temporalio/common';
import {
  createLoyaltyActivities,
  type AwardLoyaltyPointsResult,
} from '../../src/activities/loyalty-activities';
import { createLoyaltyRepository, type LoyaltyRepository } from '../../src/db/repositories/loyalty';
import { createOrdersRepository, type OrdersRepository } from '../../src/db/repositories/orders';
import { FailureType } from '../../src/shared/errors';
import { ORDER_CONFIRMED_REASON, POINTS_PER_CONFIRMED_ORDER } from '../../src/shared/loyalty';
import { quietActivityEnvironment } from '../support/activity-environment';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';

// The seed's exercise: a job that adds 100 points must not add 200 when it runs twice.

describe.each(testDatabases)('awardLoyaltyPoints ($name)', ({ create }) => {
  let handle: TestDatabaseHandle;
  let orders: OrdersRepository;
  let loyalty: LoyaltyRepository;
  let userSeq = 2_000;

  beforeAll(async () => {
    handle = await create();
    orders = createOrdersRepository(handle.db);
    loyalty = createLoyaltyRepository(handle.db);
  });
  afterAll(() => handle?.close());

  async function newOrder(userId: number): Promise<number> {
    const { order } = await orders.createWithIdempotencyKey({
      userId,
      customerEmail: 'buyer@example.com',
      totalAmount: 5_400,
    });
    return order.id;
  }

  function award(orderId: number): Promise<AwardLoyaltyPointsResult> {
    const activities = createLoyaltyActivities({ loyalty, orders });
    return quietActivityEnvironment().run(
      (input: { orderId: number }) => activities.awardLoyaltyPoints(input),
      { orderId },
    );
  }

  it('awards 100 points to the user of the order, recorded as order_confirmed', async () => {
    const userId = ++userSeq;
    const orderId = await newOrder(userId);

    await expect(award(orderId)).resolves.toEqual({ awarded: true, points: 100, balance: 100 });

    expect(POINTS_PER_CONFIRMED_ORDER).toBe(100);
    expect(await loyalty.ledgerFor(userId)).toEqual([
      expect.objectContaining({ orderId, points: 100, reason: ORDER_CONFIRMED_REASON }),
    ]);
  });

  it('adds nothing when it runs a second time for the same order (a retry or a redelivery)', async () => {
    const userId = ++userSeq;
    const orderId = await newOrder(userId);
    await award(orderId);

    await expect(award(orderId)).resolves.toEqual({ awarded: false, points: 100, balance: 100 });

    expect(await loyalty.balanceOf(userId)).toBe(100);
    expect(await loyalty.ledgerFor(userId)).toHaveLength(1);
  });

  it('awards once when 20 attempts for one order run at the same time', async () => {
    const userId = ++userSeq;
    const orderId = await newOrder(userId);

    const results = await Promise.all(Array.from({ length: 20 }, () => award(orderId)));

    expect(results.filter((r) => r.awarded)).toHaveLength(1);
    expect(await loyalty.balanceOf(userId)).toBe(100);
    expect(await loyalty.ledgerFor(userId)).toHaveLength(1);
  });

  it('gives a user with two confirmed orders 200 points', async () => {
    const userId = ++userSeq;
    const first = await newOrder(userId);
    const second = await newOrder(userId);

    await award(first);
    await expect(award(second)).resolves.toEqual({ awarded: true, points: 100, balance: 200 });
  });

  it('fails non-retryably with OrderNotFound for an order that does not exist', async () => {
    const error = await award(987_654).then(
      () => undefined,
      (e: unknown) => e,
    );

    expect(error).toBeInstanceOf(ApplicationFailure);
    expect((error as ApplicationFailure).type).toBe(FailureType.OrderNotFound);
    expect((error as ApplicationFailure).nonRetryable).toBe(true);
  });
});
