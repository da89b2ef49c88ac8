import { freePort } from '../../harness/ports';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { DefaultLogger, type LogEntry } from '@temporalio/worker';
import { createServer, type Server, type Socket } from 'node:net';
import {
  createMailActivities,
  createMailPool,
  maskAddresses,
  type MailActivityDeps,
  type MailPool,
  type SendOrderConfirmationResult,
} from '../../src/activities/mail-activities';
import { createOrdersRepository, type OrdersRepository } from '../../src/db/repositories/orders';
import { startSmtpSink, type SmtpSink } from '../../harness/partners/smtp-sink';
import { FailureType } from '../../src/shared/errors';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';
import { eventually } from '../support/eventually';
import { rejectionOf } from '../support/failures';

// sendOrderConfirmation against a real database and a real SMTP session with the local sink:
// the confirmation_sent_at guard, the deterministic Message-ID, and how SMTP failures are
// classified for the retry policy.
const FROM = 'Shop <shop@example.com>';

// The activities' log, kept instead of printed, for the tests that assert on it.
let logs: LogEntry[] = [];
const logger = new DefaultLogger('INFO', (entry) => logs.push(entry));

const failureOf = (promise: Promise<unknown>) => rejectionOf(promise, ApplicationFailure);

// Every case on each database with a connection per mail, and on SQLite once more through one
// pool of connections shared by all its cases, as the payments worker sends.
const cases = [
  ...testDatabases.map((database) => ({ ...database, pooled: false })),
  { ...testDatabases[0]!, name: `${testDatabases[0]!.name}, pooled connections`, pooled: true },
];

describe.each(cases)('sendOrderConfirmation ($name)', ({ create, pooled }) => {
  let handle: TestDatabaseHandle;
  let sink: SmtpSink;
  let orders: OrdersRepository;
  let pool: MailPool | undefined;

  beforeAll(async () => {
    [handle, sink] = await Promise.all([create(), startSmtpSink()]);
    orders = createOrdersRepository(handle.db);
    if (pooled) pool = createMailPool(sink.url, { stepMs: 1_000 });
  });
  afterAll(() => {
    pool?.close();
    return Promise.all([handle?.close(), sink?.close()]);
  });
  beforeEach(() => {
    sink.reset();
    logs = [];
  });

  async function newOrderId(): Promise<number> {
    const { order } = await orders.createWithIdempotencyKey({
      userId: 7,
      customerEmail: 'buyer@example.com',
      totalAmount: 5_400,
    });
    return order.id;
  }

  function send(
    orderId: number,
    deps: Partial<MailActivityDeps> = {},
  ): Promise<SendOrderConfirmationResult> {
    const activities = createMailActivities({
      orders,
      smtpUrl: sink.url,
      from: FROM,
      timeouts: { stepMs: 1_000, sendMs: 3_000 },
      pool,
      ...deps,
    });
    return new MockActivityEnvironment({}, { logger }).run(
      (input: { orderId: number }) => activities.sendOrderConfirmation(input),
      { orderId },
    );
  }

  const stampOf = async (orderId: number) => (await orders.findById(orderId))?.confirmationSentAt;

  it('sends the confirmation with the deterministic Message-ID and then stamps confirmation_sent_at', async () => {
    const orderId = await newOrderId();
    const messageId = `<order-${orderId}-confirmation@example.com>`;
    const before = Date.now();

    await expect(send(orderId)).resolves.toEqual({ sent: true, messageId });

    expect(sink.messages).toHaveLength(1);
    expect(sink.messages[0]).toMatchObject({
      envelopeFrom: 'shop@example.com',
      envelopeTo: ['buyer@example.com'],
      subject: `Order #${orderId} confirmed`,
      messageId,
    });
    expect(sink.messages[0]!.text).toContain('Total amount: 5400');
    // No out-of-office replies to an automatic mail (RFC 3834).
    expect(sink.messages[0]!.headers['auto-submitted']).toBe('auto-generated');
    const stamp = await stampOf(orderId);
    expect(Date.parse(stamp!)).toBeGreaterThanOrEqual(before - 1_000);
    expect(logs).toContainEqual(
      expect.objectContaining({
        level: 'INFO',
        message: 'order confirmation sent',
        meta: expect.objectContaining({ orderId, messageId }) as unknown,
      }),
    );
  });

  it('skips an order whose confirmation is already stamped, sending no second mail', async () => {
    const orderId = await newOrderId();
    await send(orderId);
    const stamp = await stampOf(orderId);

    const again = await send(orderId);

    expect(again).toEqual({
      sent: false,
      skipped: 'already-sent',
      messageId: `<order-${orderId}-confirmation@example.com>`,
    });
    expect(sink.messages).toHaveLength(1);
    expect(await stampOf(orderId)).toBe(stamp);
  });

  it('fails retryably with MailUnavailable on a 4xx reply, stamps nothing, and the retry sends one mail', async () => {
    const orderId = await newOrderId();
    sink.failNext(1, { code: 451, message: 'local error in processing' });

    const failure = await failureOf(send(orderId));
    expect(failure.type).toBe(FailureType.MailUnavailable);
    expect(failure.nonRetryable).toBe(false);
    expect(failure.message).toBe(
      `mail server deferred the confirmation of order ${orderId}: 451 local error in processing`,
    );
    expect(failure.details).toEqual([
      expect.objectContaining({
        orderId,
        responseCode: 451,
        code: expect.any(String) as unknown,
        command: expect.any(String) as unknown,
      }),
    ]);
    expect(await stampOf(orderId)).toBeNull();
    expect(sink.messages).toHaveLength(0);

    await expect(send(orderId)).resolves.toMatchObject({ sent: true });
    expect(sink.messages).toHaveLength(1);
    expect(await stampOf(orderId)).not.toBeNull();
  });

  it('fails non-retryably with MailRejected on a 5xx reply and stamps nothing', async () => {
    const orderId = await newOrderId();
    sink.setMode({ kind: 'reject', code: 550, message: 'mailbox unavailable' });

    const failure = await failureOf(send(orderId));

    expect(failure.type).toBe(FailureType.MailRejected);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toBe(
      `mail server refused the confirmation of order ${orderId}: 550 mailbox unavailable`,
    );
    expect(await stampOf(orderId)).toBeNull();
  });

  it("keeps the recipient's address out of the failure's message and causes (stored in clear), but in its details", async () => {
    const orderId = await newOrderId();
    sink.setMode({
      kind: 'reject',
      code: 550,
      message: '5.1.1 <buyer@example.com>: Recipient address rejected',
    });

    const failure = await failureOf(send(orderId));

    expect(failure.type).toBe(FailureType.MailRejected);
    expect(failure.message).toContain('<[address]>: Recipient address rejected');
    const inClear: string[] = [];
    for (let e: Error | undefined = failure; e; e = e.cause as Error | undefined) {
      inClear.push(e.message, e.stack ?? '');
    }
    expect(inClear.join('\n')).not.toContain('buyer@example.com');
    expect(JSON.stringify(failure.details)).toContain('buyer@example.com');
  });

  it('fails non-retryably with MailRejected when the order has no usable address (no retry can fix it)', async () => {
    const { order } = await orders.createWithIdempotencyKey({
      userId: 7,
      customerEmail: 'not an address',
      totalAmount: 5_400,
    });

    const failure = await failureOf(send(order.id));

    expect(failure.type).toBe(FailureType.MailRejected);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.details).toEqual([expect.objectContaining({ code: 'EENVELOPE' })]);
    expect(sink.messages).toHaveLength(0);
    expect(await stampOf(order.id)).toBeNull();
  });

  it('fails retryably with MailUnavailable when no mail server listens', async () => {
    const orderId = await newOrderId();
    const smtpUrl = `smtp://127.0.0.1:${await freePort()}`;
    const nowhere = pooled ? createMailPool(smtpUrl, { stepMs: 1_000 }) : undefined;

    const failure = await failureOf(send(orderId, { smtpUrl, pool: nowhere })).finally(() =>
      nowhere?.close(),
    );

    expect(failure.type).toBe(FailureType.MailUnavailable);
    expect(failure.nonRetryable).toBe(false);
    expect(failure.message).toMatch(
      new RegExp(
        `^mail server unavailable for the confirmation of order ${orderId}: .*ECONNREFUSED`,
      ),
    );
    expect(await stampOf(orderId)).toBeNull();
  });

  it('fails retryably when the server takes the mail but answers too late; the retry repeats it under the same Message-ID', async () => {
    // The gap that remains: the server has the mail, we never learn it, nothing is stamped.
    const orderId = await newOrderId();
    sink.setMode({ kind: 'accept', delayMs: 2_000 });

    const failure = await failureOf(send(orderId, { timeouts: { stepMs: 300, sendMs: 3_000 } }));
    expect(failure.type).toBe(FailureType.MailUnavailable);
    expect(await stampOf(orderId)).toBeNull();

    sink.setMode({ kind: 'accept' });
    await expect(send(orderId)).resolves.toMatchObject({ sent: true });

    const ids = sink.messages.map((m) => m.messageId);
    expect(ids).toEqual([
      `<order-${orderId}-confirmation@example.com>`,
      `<order-${orderId}-confirmation@example.com>`,
    ]);
    expect(await stampOf(orderId)).not.toBeNull();
  });

  it('gives up within the whole-send limit even when each step answers in time', async () => {
    const orderId = await newOrderId();
    sink.setMode({ kind: 'accept', delayMs: 1_500 });

    const failure = await failureOf(send(orderId, { timeouts: { stepMs: 2_000, sendMs: 500 } }));

    expect(failure.type).toBe(FailureType.MailUnavailable);
    expect(failure.message).toContain('within 500 ms');
  });

  it('stops waiting for the server when the activity is cancelled, reporting the cancellation', async () => {
    const orderId = await newOrderId();
    sink.setMode({ kind: 'accept', delayMs: 2_000 });
    const activities = createMailActivities({ orders, smtpUrl: sink.url, from: FROM, pool });
    const env = new MockActivityEnvironment({}, { logger });

    const running = env.run(
      (input: { orderId: number }) => activities.sendOrderConfirmation(input),
      { orderId },
    );
    while (sink.messages.length === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    env.cancel();

    await expect(running).rejects.toBeInstanceOf(CancelledFailure);
    expect(await stampOf(orderId)).toBeNull();
  });

  it('lets concurrent calls for one order each send (same Message-ID) but stamps once: callers serialise per order', async () => {
    // Send-then-stamp cannot stop two calls that both read "not sent yet"; the order workflow
    // runs this activity one at a time per order. What still holds under the race: every copy
    // names the same message, and the stamp is written once.
    const orderId = await newOrderId();

    const results = await Promise.all(Array.from({ length: 5 }, () => send(orderId)));

    const messageId = `<order-${orderId}-confirmation@example.com>`;
    expect(results.every((r) => r.messageId === messageId)).toBe(true);
    const sent = results.filter((r) => r.sent).length;
    expect(sent).toBeGreaterThanOrEqual(1);
    expect(sink.messages).toHaveLength(sent);
    // Every sender but the one that stamped first says it may have sent a duplicate.
    const duplicates = logs.filter(
      (w) => w.level === 'WARN' && w.message.includes('another attempt had stamped'),
    );
    expect(duplicates).toHaveLength(sent - 1);
    expect(new Set(sink.messages.map((m) => m.messageId))).toEqual(new Set([messageId]));
    expect(await stampOf(orderId)).not.toBeNull();
  });

  it('fails non-retryably with OrderNotFound for an order that does not exist, sending nothing', async () => {
    const failure = await failureOf(send(987_654));

    expect(failure.type).toBe(FailureType.OrderNotFound);
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toBe('order 987654 does not exist');
    expect(failure.details).toEqual([{ orderId: 987_654 }]);
    expect(sink.messages).toHaveLength(0);
  });
});

describe('sendOrderConfirmation through a pool of connections', () => {
  let handle: TestDatabaseHandle;
  let orders: OrdersRepository;

  beforeAll(async () => {
    handle = await testDatabases[0]!.create();
    orders = createOrdersRepository(handle.db);
  });
  afterAll(() => handle?.close());

  async function sendThrough(
    pool: MailPool,
    smtpUrl: string,
  ): Promise<SendOrderConfirmationResult> {
    const { order } = await orders.createWithIdempotencyKey({
      userId: 7,
      customerEmail: 'buyer@example.com',
      totalAmount: 5_400,
    });
    const activities = createMailActivities({ orders, smtpUrl, from: FROM, pool });
    return new MockActivityEnvironment({}, { logger }).run(
      (input: { orderId: number }) => activities.sendOrderConfirmation(input),
      { orderId: order.id },
    );
  }

  /** A pool on a fresh SMTP sink for `use`; both closed after it, whatever it does. */
  async function withPooledSink(
    options: Parameters<typeof createMailPool>[1],
    use: (pool: MailPool, sink: SmtpSink) => Promise<void>,
  ): Promise<void> {
    const sink = await startSmtpSink();
    // The pool connects at its first send, so `use` may still set the sink's mode.
    const pool = createMailPool(sink.url, options);
    try {
      await use(pool, sink);
    } finally {
      pool.close();
      await sink.close();
    }
  }

  it('sends one confirmation after another over one connection, and a new one once the idle one is dropped', async () => {
    await withPooledSink({ stepMs: 300 }, async (pool, sink) => {
      for (let i = 0; i < 3; i += 1) await sendThrough(pool, sink.url);
      expect(sink.messages).toHaveLength(3);
      expect(sink.connectionCount).toBe(1);

      // Idle for longer than a step, the connection is closed by the pool, not left open.
      await eventually(() => expect(sink.openConnections).toBe(0));
      await expect(sendThrough(pool, sink.url)).resolves.toMatchObject({ sent: true });
      expect(sink.messages).toHaveLength(4);
      expect(sink.connectionCount).toBe(2);
    });
  });

  it('opens at most maxConnections at once; the other mails wait for a free one', async () => {
    await withPooledSink({ maxConnections: 2 }, async (pool, sink) => {
      sink.setMode({ kind: 'accept', delayMs: 150 });
      const results = await Promise.all(
        Array.from({ length: 5 }, () => sendThrough(pool, sink.url)),
      );

      expect(results.every((r) => r.sent)).toBe(true);
      expect(sink.messages).toHaveLength(5);
      expect(sink.connectionCount).toBe(2);
    });
  });

  it('fails the attempt at once, for Temporal to retry, when the server hangs up before its greeting', async () => {
    const hangUp = await listenOnLoopback((socket) => socket.end());
    const pool = createMailPool(hangUp.url, { stepMs: 1_000 });
    try {
      const failure = await failureOf(sendThrough(pool, hangUp.url));

      expect(failure.type).toBe(FailureType.MailUnavailable);
      expect(failure.nonRetryable).toBe(false);
      // One connection: no second try inside the attempt, out of the history's sight.
      expect(hangUp.connections()).toBe(1);
    } finally {
      pool.close();
      await hangUp.close();
    }
  });
});

/** A TCP server on loopback that hands each connection to `onConnection`, and counts them. */
async function listenOnLoopback(onConnection: (socket: Socket) => void) {
  let connections = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    onConnection(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    url: `smtp://127.0.0.1:${port}`,
    connections: () => connections,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe('createMailActivities', () => {
  it('refuses a sender address without a domain when built, not on every attempt', () => {
    const orders = {} as OrdersRepository;
    expect(() =>
      createMailActivities({ orders, smtpUrl: 'smtp://127.0.0.1:1', from: 'shop' }),
    ).toThrow(/no usable domain/);
  });

  it('masks every address in a text, and takes no text as empty', () => {
    expect(maskAddresses('550 <a.b@example.com>, c@d.example: rejected')).toBe(
      '550 <[address]>, [address]: rejected',
    );
    expect(maskAddresses(undefined)).toBe('');
  });
});
