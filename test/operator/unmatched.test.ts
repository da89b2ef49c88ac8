import {
  createOrdersRepository,
  createUnmatchedRepository,
  type UnmatchedRepository,
} from '../../src/db';
import { main as ops } from '../../src/cli/ops';
import { attachUnmatched, closeUnmatched } from '../../src/operator/unmatched';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';
import { recordingPaymentStarter, type RecordingPaymentStarter } from '../support/webhook';

// Resolving the unmatched inbox: each entry once, an attached payment started once under a
// stable workflow ID, whatever is run again or at the same time.

describe.each(testDatabases)('the unmatched inbox, resolved ($name)', ({ create }) => {
  let handle: TestDatabaseHandle;
  let inbox: UnmatchedRepository;
  let starter: RecordingPaymentStarter;
  let orderId: number;
  let otherOrderId: number;

  beforeAll(async () => {
    handle = await create();
    inbox = createUnmatchedRepository(handle.db);
    const orders = createOrdersRepository(handle.db);
    const order = (email: string) =>
      orders.createWithIdempotencyKey({ userId: 1, customerEmail: email, totalAmount: 5400 });
    orderId = (await order('a@example.com')).order.id;
    otherOrderId = (await order('b@example.com')).order.id;
  });
  afterAll(() => handle?.close());
  beforeEach(() => {
    starter = recordingPaymentStarter();
  });

  let counter = 0;
  const keep = (payload: unknown) =>
    inbox.record({
      reason: 'foreign_order_ref',
      provider: 'stripe',
      eventId: `stripe~evt_op_${++counter}`,
      payload,
    });
  const payment = {
    event: 'payment_intent.succeeded',
    eventId: 'stripe~evt_x',
    orderRef: 'ORD-1',
    amount: 5400,
    currency: 'jpy',
    paymentRef: 'stripe~pi_x',
  };
  const deps = () => ({ inbox, payments: starter, shopCurrency: 'jpy' });

  it('attaches a payment to an order once: claimed, then started under payment-unmatched~<id>', async () => {
    const { id } = await keep(payment);
    const first = await attachUnmatched(deps(), id, orderId, 'ORD-1 is order 1');
    expect(first).toMatchObject({
      kind: 'attached',
      first: true,
      started: { workflowId: `payment-unmatched~${id}`, duplicate: false },
      entry: { resolution: { kind: 'attached', orderId, note: 'ORD-1 is order 1' } },
    });
    expect(starter.starts).toEqual([
      {
        eventId: `unmatched~${id}`,
        orderId,
        amount: 5400,
        paymentRef: 'stripe~pi_x',
        currency: 'jpy',
      },
    ]);

    // Run again (the operator, or after a crash between claim and start): the same start.
    const again = await attachUnmatched(deps(), id, orderId);
    expect(again).toMatchObject({ kind: 'attached', first: false, started: { duplicate: true } });
    expect(starter.starts.map((s) => s.eventId)).toEqual([`unmatched~${id}`, `unmatched~${id}`]);
    expect((await inbox.get(id))?.resolution).toMatchObject({ note: 'ORD-1 is order 1' });
  });

  it('refuses another order once attached, and lets one of two operators at once win', async () => {
    const { id } = await keep(payment);
    const [a, b] = await Promise.all([
      attachUnmatched(deps(), id, orderId),
      attachUnmatched(deps(), id, otherOrderId),
    ]);
    const results = [a, b];
    expect(results.filter((r) => r.kind === 'attached')).toHaveLength(1);
    expect(results.filter((r) => r.kind === 'refused')).toEqual([
      { kind: 'refused', reason: expect.stringMatching(/^entry \d+ is already attached to order/) },
    ]);
    expect(starter.starts).toHaveLength(1);
  });

  it('refuses an order that does not exist, leaving the entry open', async () => {
    const { id } = await keep(payment);
    expect(await attachUnmatched(deps(), id, 987_654)).toEqual({
      kind: 'refused',
      reason: 'order 987654 does not exist',
    });
    expect((await inbox.get(id))?.resolution).toBeNull();
    expect(starter.starts).toEqual([]);
  });

  it.each([
    ['a refund', { kind: 'refund', refundId: 're_1', amount: 100, paymentRef: 'stripe~pi_1' }],
    ['a dispute', { disputeId: 'dp_1', amount: 100, paymentRef: 'stripe~pi_1', status: 'opened' }],
    ['a provider object without an amount', { event: 'x', object: { livemode: true } }],
    ['a payment in another currency', { ...payment, currency: 'usd' }],
  ])('refuses to attach %s: it cannot pay an order', async (_name, payload) => {
    const { id } = await keep(payload);
    const result = await attachUnmatched(deps(), id, orderId);
    expect(result.kind).toBe('refused');
    expect((await inbox.get(id))?.resolution).toBeNull();
    expect(starter.starts).toEqual([]);
  });

  it('marks refunded or dismisses once, and refuses to attach what is closed', async () => {
    const refunded = await keep(payment);
    const dismissed = await keep(payment);
    expect(
      await closeUnmatched(inbox, refunded.id, { kind: 'refunded_outside', note: 'dashboard' }),
    ).toMatchObject({ kind: 'resolved', entry: { resolution: { kind: 'refunded_outside' } } });
    expect(
      await closeUnmatched(inbox, dismissed.id, { kind: 'dismissed', note: 'test' }),
    ).toMatchObject({
      kind: 'resolved',
    });
    expect(await closeUnmatched(inbox, dismissed.id, { kind: 'dismissed', note: 'again' })).toEqual(
      {
        kind: 'refused',
        reason: expect.stringMatching(/is already dismissed at .* \(test\)$/) as unknown,
      },
    );
    expect(await attachUnmatched(deps(), refunded.id, orderId)).toMatchObject({
      kind: 'refused',
      reason: expect.stringMatching(/is already marked refunded outside/) as unknown,
    });
    expect(await closeUnmatched(inbox, 987_654, { kind: 'dismissed', note: 'x' })).toEqual({
      kind: 'refused',
      reason: 'no unmatched entry 987654',
    });
    expect(starter.starts).toEqual([]);
  });

  it('lists, shows and resolves from the command line, without Temporal', async () => {
    const { id } = await keep(payment);
    const out: string[] = [];
    const err: string[] = [];
    const io = {
      out: (t: string) => out.push(t),
      err: (t: string) => err.push(t),
      user: 'alice',
      env: { DATABASE_URL: handle.url, TEMPORAL_ADDRESS: '127.0.0.1:1' },
    };
    expect(await ops(['unmatched', 'list'], io)).toBe(0);
    expect(out.join('\n')).toMatch(
      new RegExp(`\\n${id} +foreign_order_ref +stripe +stripe~evt_op`),
    );
    expect(await ops(['unmatched', 'show', String(id)], io)).toBe(0);
    expect(out.at(-1)).toContain('"orderRef": "ORD-1"');
    expect(await ops(['unmatched', 'dismiss', String(id), '--reason', 'a test payment'], io)).toBe(
      0,
    );
    expect(out.at(-1)).toMatch(
      new RegExp(`^Entry ${id} dismissed at .* \\(a test payment \\(by alice\\)\\)\\.$`),
    );
    expect(await ops(['unmatched', 'refunded', String(id)], io)).toBe(1);
    expect(err.at(-1)).toMatch(/^Refused: entry \d+ is already dismissed/);
    expect(await ops(['unmatched', 'list', '--resolved'], io)).toBe(0);
    expect(out.at(-1)).toContain('dismissed at');
    expect(await ops(['unmatched', 'dismiss', String(id)], io)).toBe(2);
    expect(await ops(['unmatched', 'attach', String(id)], io)).toBe(2);
  });
});
