import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import {
  createOrdersRepository,
  createPaymentsRepository,
  createSettlementsRepository,
  type DatabaseHandle,
} from '../../src/db';
import { buildTestApp, postWithHeaderLines } from '../support/app';
import { testDatabases } from '../../harness/databases';

describe.each(testDatabases)('POST /api/v1/orders ($name)', ({ create }) => {
  let db: DatabaseHandle;
  let app: FastifyInstance;

  beforeAll(async () => {
    db = await create();
    app = await buildTestApp({ db });
  });
  afterAll(async () => {
    await app?.close();
    await db?.close();
  });

  const body = { user_id: 7, customer_email: 'buyer@example.com', total_amount: 5400 };
  const post = (payload: unknown, key?: string) =>
    app.inject({
      method: 'POST',
      url: '/api/v1/orders',
      payload: payload as object,
      headers: key === undefined ? {} : { 'idempotency-key': key },
    });
  /** POSTs a body as given, with this Content-Type. */
  const postRaw = (payload: string, contentType: string) =>
    app.inject({
      method: 'POST',
      url: '/api/v1/orders',
      payload,
      headers: { 'content-type': contentType },
    });
  const countOrders = async () =>
    Number(
      (
        await db.db
          .selectFrom('orders')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );

  it('creates an order with 201, a Location header and the stored fields', async () => {
    const res = await post(body, 'create-1');
    expect(res.statusCode).toBe(201);
    const order = res.json<{ id: number }>();
    expect(order).toMatchObject({
      ...body,
      status: 'pending',
      shipment_status: null,
      confirmation_sent_at: null,
    });
    expect(res.headers.location).toBe(`/api/v1/orders/${order.id}`);

    const fetched = await app.inject({ method: 'GET', url: `/api/v1/orders/${order.id}` });
    expect(fetched.json()).toMatchObject({ id: order.id, payments: [] });
  });

  it('shows refund_review_requested_at: null until a review is requested, then its time', async () => {
    const created = await post(body);
    const order = created.json<{ id: number }>();
    // Present even when unset, so a client can tell "no review" from "field not sent".
    expect(created.json()).toHaveProperty('refund_review_requested_at', null);
    const get = () => app.inject({ method: 'GET', url: `/api/v1/orders/${order.id}` });
    expect((await get()).json()).toHaveProperty('refund_review_requested_at', null);

    // What the order workflow does on a double charge or a payment that is not the total.
    await createOrdersRepository(db.db).requestRefundReview(order.id);
    const flagged = (await get()).json<{ refund_review_requested_at: string | null }>();
    const stored = await createOrdersRepository(db.db).findById(order.id);
    expect(stored?.refundReviewRequestedAt).toEqual(expect.any(String));
    expect(flagged.refund_review_requested_at).toBe(stored?.refundReviewRequestedAt);
  });

  it('shows the refunded total, and a return review once one is requested', async () => {
    const order = (await post(body)).json<{ id: number }>();
    const get = () => app.inject({ method: 'GET', url: `/api/v1/orders/${order.id}` });
    expect((await get()).json()).toMatchObject({
      refunded_amount: 0,
      return_review_requested_at: null,
    });

    // What the order workflow records when refunds are applied (src/workflows/order.ts).
    await createOrdersRepository(db.db).setRefundedAmount(order.id, 5_400);
    await createOrdersRepository(db.db).requestReturnReview(order.id);
    expect((await get()).json()).toMatchObject({
      refunded_amount: 5_400,
      return_review_requested_at: expect.any(String),
    });
  });

  it('shows where its disputes stand and its settlement, null until there are any', async () => {
    const order = (await post(body)).json<{ id: number }>();
    const get = () => app.inject({ method: 'GET', url: `/api/v1/orders/${order.id}` });
    expect((await get()).json()).toMatchObject({
      dispute_status: null,
      dispute_closed_at: null,
      settlement: null,
    });

    // What the order workflow records when a dispute is closed (src/workflows/order.ts).
    const closedAt = '2026-12-03T10:00:00.000Z';
    await createOrdersRepository(db.db).setDisputeOutcome(order.id, { status: 'lost', closedAt });
    // A short payment, then what `ops settle` records.
    await createPaymentsRepository(db.db).recordPayment({
      providerEventId: `evt_short_${order.id}`,
      orderId: order.id,
      amount: 5_000,
    });
    const settled = await createSettlementsRepository(db.db).settle({
      orderId: order.id,
      settledBy: 'alice',
      reason: 'customer paid the rest by bank transfer',
    });
    expect(settled.kind).toBe('settled');
    expect((await get()).json()).toMatchObject({
      status: 'paid',
      dispute_status: 'lost',
      dispute_closed_at: closedAt,
      settlement: {
        settled_by: 'alice',
        settled_at: expect.any(String),
        reason: 'customer paid the rest by bank transfer',
        payment_ids: [expect.any(Number)],
      },
    });
  });

  it('returns the same order for the same key and body, without a second row', async () => {
    const before = await countOrders();
    const first = await post(body, 'same-key');
    // Same request, keys in another order: the fingerprint is over the validated values.
    const again = await post(
      { total_amount: 5400, customer_email: 'buyer@example.com', user_id: 7 },
      'same-key',
    );
    expect(first.statusCode).toBe(201);
    expect(again.statusCode).toBe(200);
    expect(again.headers['idempotent-replayed']).toBe('true');
    expect(again.json<{ id: number }>().id).toBe(first.json<{ id: number }>().id);
    expect(await countOrders()).toBe(before + 1);
  });

  it('refuses the same key with a different body with 422 and creates nothing', async () => {
    await post(body, 'reused-key');
    const before = await countOrders();
    const res = await post({ ...body, total_amount: 1 }, 'reused-key');
    expect(res.statusCode).toBe(422);
    expect(res.json<{ error: string }>().error).toMatch(/Idempotency-Key/);
    expect(await countOrders()).toBe(before);
  });

  it('creates exactly one order when the same key arrives concurrently', async () => {
    const before = await countOrders();
    const replies = await Promise.all(
      Array.from({ length: 20 }, () => post(body, 'concurrent-key')),
    );
    expect(replies.filter((r) => r.statusCode === 201)).toHaveLength(1);
    expect(replies.filter((r) => r.statusCode === 200)).toHaveLength(19);
    expect(new Set(replies.map((r) => r.json<{ id: number }>().id)).size).toBe(1);
    expect(await countOrders()).toBe(before + 1);
  });

  it('refuses two Idempotency-Key headers with 400, saying only one is allowed', async () => {
    const before = await countOrders();
    for (const keys of [
      ['k2', 'k3'],
      ['same', 'same'],
    ]) {
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/orders',
        payload: body,
        headers: { 'idempotency-key': keys },
      });
      expect([res.statusCode, res.json()]).toEqual([
        400,
        { error: 'exactly one Idempotency-Key header is allowed' },
      ]);
    }
    expect(await countOrders()).toBe(before);
  });

  it('counts Idempotency-Key header lines over real HTTP, not commas in a value', async () => {
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as AddressInfo;
    const send = (lines: string[]) =>
      postWithHeaderLines(port, '/api/v1/orders', JSON.stringify(body), [
        'Content-Type',
        'application/json',
        ...lines,
      ]);

    // Node hands the route "k2, k3" for these two lines; the lines themselves are the evidence.
    const twice = await send(['Idempotency-Key', 'k2', 'idempotency-key', 'k3']);
    expect([twice.status, JSON.parse(twice.body)]).toEqual([
      400,
      { error: 'exactly one Idempotency-Key header is allowed' },
    ]);
    // One line whose value has a comma is one (valid) key.
    const once = await send(['Idempotency-Key', `wire-${process.pid}-k2,k3`]);
    expect(once.status).toBe(201);
  });

  it('refuses a total or user ID beyond the database integer columns (2^31 - 1) with 400, not 500', async () => {
    for (const overrides of [{ total_amount: 2_147_483_648 }, { user_id: 2_147_483_648 }]) {
      const res = await post({ ...body, ...overrides });
      expect(res.statusCode).toBe(400);
      expect(res.json<{ error: string }>().error).toMatch(/<=2147483647/);
    }
    expect((await post({ ...body, total_amount: 2_147_483_647 })).statusCode).toBe(201);
  });

  it('creates distinct orders without a key', async () => {
    const a = await post(body);
    const b = await post(body);
    expect(a.json<{ id: number }>().id).not.toBe(b.json<{ id: number }>().id);
  });

  it.each([
    ['a missing email', { user_id: 7, total_amount: 5400 }],
    ['a bad email', { ...body, customer_email: 'not-an-email' }],
    ['a zero amount', { ...body, total_amount: 0 }],
    ['a string user id', { ...body, user_id: '7' }],
  ])('rejects %s with 400 and a reason', async (_label, payload) => {
    const res = await post(payload, 'invalid');
    expect(res.statusCode).toBe(400);
    expect(res.json<{ error: string }>().error).toMatch(/user_id|customer_email|total_amount/);
  });

  it('rejects malformed JSON with 400 and an unprintable key with 400', async () => {
    const bad = await postRaw('{"user_id":', 'application/json');
    expect(bad.statusCode).toBe(400);
    const badKey = await post(body, 'has space');
    expect(badKey.statusCode).toBe(400);
  });

  it.each([
    ['__proto__', '{"__proto__":{"admin":true},"user_id":7}'],
    ['constructor.prototype', '{"constructor":{"prototype":{"admin":true}},"user_id":7}'],
  ])('refuses a %s key (prototype poisoning) with 400 and says why', async (_label, payload) => {
    const res = await postRaw(payload, 'application/json; charset=utf-8');
    expect(res.statusCode).toBe(400);
    expect(res.json<{ error: string }>().error).toBe(
      'request body must not contain a __proto__ or constructor key',
    );
  });

  it('answers 415 for a body that is not JSON', async () => {
    const res = await postRaw('user_id=7', 'text/plain');
    expect(res.statusCode).toBe(415);
    expect(res.json<{ error: string }>().error).toBe('unsupported content type');
  });

  it('answers 404 for an unknown order and 400 for a non-numeric id', async () => {
    expect((await app.inject({ method: 'GET', url: '/api/v1/orders/999999' })).statusCode).toBe(
      404,
    );
    expect((await app.inject({ method: 'GET', url: '/api/v1/orders/abc' })).statusCode).toBe(400);
  });

  it('answers 404 naming the id for the largest id the database can hold', async () => {
    const res = await app.inject({ method: 'GET', url: '/api/v1/orders/2147483647' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({ error: 'order 2147483647 not found' });
  });

  it.each([
    ['an exponent', '1e3'],
    ['hex', '0x10'],
    ['octal prefix', '0o7'],
    ['binary prefix', '0b1'],
    ['a plus sign', '+5'],
    ['a minus sign', '-5'],
    ['zero', '0'],
    ['a leading zero', '07'],
    ['a fraction', '1.5'],
    ['a trailing .0', '1.0'],
    ['a leading space', '%205'],
    ['a trailing space', '5%20'],
    ['a tab', '5%09'],
    ['digit separators', '1_000'],
    ['Infinity', 'Infinity'],
    ['non-ASCII digits', '%D9%A1'],
    ['an unsafe integer', '9007199254740993'],
    ['an id beyond the database id range', '2147483648'],
  ])('answers 400 for an id with %s, never coercing it to another order', async (_label, id) => {
    const res = await app.inject({ method: 'GET', url: `/api/v1/orders/${id}` });
    expect([res.statusCode, res.json()]).toEqual([
      400,
      { error: 'order id must be a positive integer' },
    ]);
  });
});
