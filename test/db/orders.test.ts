import { createOrdersRepository, type CreateOrderInput } from '../../src/db/repositories/orders';
import { testDatabases } from '../../harness/databases';
import { useTestDatabase } from '../support/database-fixture';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe.each(testDatabases)('orders repository ($name)', ({ create }) => {
  const database = useTestDatabase(create);
  const orders = database.repository(createOrdersRepository);
  let keySeq = 0;
  const nextKey = () => `key-${++keySeq}-${Date.now()}`;

  const request = (overrides: Partial<CreateOrderInput> = {}): CreateOrderInput => ({
    userId: 42,
    customerEmail: 'buyer@example.com',
    totalAmount: 5_400,
    ...overrides,
  });

  async function rowsWithKey(key: string): Promise<number> {
    const rows = await database.handle.db
      .selectFrom('orders')
      .select('id')
      .where('idempotency_key', '=', key)
      .execute();
    return rows.length;
  }

  it('creates a pending order with ISO-8601 timestamps', async () => {
    const result = await orders.createWithIdempotencyKey(request());

    expect(result).toEqual({
      kind: 'created',
      order: {
        id: expect.any(Number),
        userId: 42,
        customerEmail: 'buyer@example.com',
        status: 'pending',
        totalAmount: 5_400,
        idempotencyKey: null,
        idempotencyFingerprint: null,
        confirmationSentAt: null,
        shipmentStatus: null,
        refundReviewRequestedAt: null,
        refundedAmount: 0,
        returnReviewRequestedAt: null,
        disputeStatus: null,
        disputeClosedAt: null,
        settlement: null,
        createdAt: expect.stringMatching(ISO_UTC),
        updatedAt: expect.stringMatching(ISO_UTC),
      },
    });
    expect(await orders.findById(result.order.id)).toEqual(result.order);
  });

  it('creates a new order for every request without an idempotency key', async () => {
    const first = await orders.createWithIdempotencyKey(request());
    const second = await orders.createWithIdempotencyKey(request());
    expect(second.kind).toBe('created');
    expect(second.order.id).not.toBe(first.order.id);
  });

  it('replays the first order, without a second row, for the same key and fingerprint', async () => {
    const key = nextKey();
    const first = await orders.createWithIdempotencyKey(
      request({ idempotencyKey: key, fingerprint: 'f1' }),
    );

    const replay = await orders.createWithIdempotencyKey(
      request({ idempotencyKey: key, fingerprint: 'f1' }),
    );

    expect(first.kind).toBe('created');
    expect(replay).toEqual({ kind: 'replayed', order: first.order });
    expect(await rowsWithKey(key)).toBe(1);
  });

  it('refuses a different request under a used key: other fingerprint, other user or other amount', async () => {
    const key = nextKey();
    const first = await orders.createWithIdempotencyKey(
      request({ idempotencyKey: key, fingerprint: 'f1' }),
    );

    const attempts = [
      request({ idempotencyKey: key, fingerprint: 'f2' }),
      request({ idempotencyKey: key, fingerprint: 'f1', userId: 43 }),
      request({ idempotencyKey: key, fingerprint: 'f1', totalAmount: 1 }),
      request({
        idempotencyKey: key,
        fingerprint: 'f1',
        customerEmail: 'someone-else@example.com',
      }),
      request({ idempotencyKey: key }),
    ];
    for (const attempt of attempts) {
      expect(await orders.createWithIdempotencyKey(attempt)).toEqual({
        kind: 'key_reused_with_different_request',
        order: first.order,
      });
    }
    expect(await rowsWithKey(key)).toBe(1);
  });

  it('creates one row for 20 concurrent requests with the same key, through several handles', async () => {
    const key = nextKey();
    const results = await database.acrossHandles(createOrdersRepository, 20, (repository) =>
      repository.createWithIdempotencyKey(request({ idempotencyKey: key, fingerprint: 'f' })),
    );

    expect(results.filter((r) => r.kind === 'created')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'replayed')).toHaveLength(19);
    expect(new Set(results.map((r) => r.order.id)).size).toBe(1);
    expect(await rowsWithKey(key)).toBe(1);
  });

  it('finds nothing for an unknown ID', async () => {
    expect(await orders.findById(999_999)).toBeUndefined();
  });

  it('sets and clears the shipment status, and says when there is no such order', async () => {
    const { order } = await orders.createWithIdempotencyKey(request());

    expect(await orders.setShipmentStatus(order.id, 'requested')).toBe(true);
    expect((await orders.findById(order.id))?.shipmentStatus).toBe('requested');
    expect(await orders.setShipmentStatus(order.id, 'failed')).toBe(true);
    expect((await orders.findById(order.id))?.shipmentStatus).toBe('failed');
    expect(await orders.setShipmentStatus(order.id, null)).toBe(true);
    expect((await orders.findById(order.id))?.shipmentStatus).toBeNull();

    expect(await orders.setShipmentStatus(999_999, 'requested')).toBe(false);
  });

  it('stamps confirmation_sent_at once: of concurrent callers, exactly one learns it was first', async () => {
    const { order } = await orders.createWithIdempotencyKey(request());

    const results = await Promise.all(
      Array.from({ length: 10 }, () => orders.markConfirmationSent(order.id)),
    );

    expect(results.filter(Boolean)).toHaveLength(1);
    expect((await orders.findById(order.id))?.confirmationSentAt).toMatch(ISO_UTC);
    expect(await orders.markConfirmationSent(999_999)).toBe(false);
  });

  it('asks for a refund review once: the first request says so, later ones do not', async () => {
    const { order } = await orders.createWithIdempotencyKey(request());

    expect(await orders.requestRefundReview(order.id)).toBe(true);
    const stamped = (await orders.findById(order.id))?.refundReviewRequestedAt;
    expect(stamped).toMatch(ISO_UTC);
    expect(await orders.requestRefundReview(order.id)).toBe(false);
    expect((await orders.findById(order.id))?.refundReviewRequestedAt).toBe(stamped);
    expect(await orders.requestRefundReview(999_999)).toBe(false);
  });

  it('requests a return review once: the first call stamps it, later ones keep that time', async () => {
    const { order } = await orders.createWithIdempotencyKey(request({ idempotencyKey: nextKey() }));
    expect((await orders.findById(order.id))?.returnReviewRequestedAt).toBeNull();
    expect(await orders.requestReturnReview(order.id)).toBe(true);
    const stamped = (await orders.findById(order.id))?.returnReviewRequestedAt;
    expect(stamped).toEqual(expect.any(String));
    expect(await orders.requestReturnReview(order.id)).toBe(false);
    expect((await orders.findById(order.id))?.returnReviewRequestedAt).toBe(stamped);
    expect(await orders.requestReturnReview(999_999)).toBe(false);
  });

  it('records where its disputes stand, and only on that order', async () => {
    const { order } = await orders.createWithIdempotencyKey(request({ idempotencyKey: nextKey() }));
    const { order: other } = await orders.createWithIdempotencyKey(
      request({ idempotencyKey: nextKey() }),
    );
    await orders.setDisputeOutcome(order.id, { status: 'opened', closedAt: null });
    expect(await orders.findById(order.id)).toMatchObject({
      disputeStatus: 'opened',
      disputeClosedAt: null,
    });
    await orders.setDisputeOutcome(order.id, {
      status: 'lost',
      closedAt: '2026-12-01T00:00:00.000Z',
    });
    expect(await orders.findById(order.id)).toMatchObject({
      disputeStatus: 'lost',
      disputeClosedAt: '2026-12-01T00:00:00.000Z',
    });
    expect(await orders.findById(other.id)).toMatchObject({
      disputeStatus: null,
      disputeClosedAt: null,
    });
  });
});
