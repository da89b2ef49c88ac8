import type { FastifyInstance } from 'fastify';
import { signBody } from '../../src/http/signature';
import {
  buildWebhookApp,
  deliverWebhook,
  expectRefused,
  paymentEvent,
  recordingPaymentStarter,
  TEST_WEBHOOK_SECRET,
  type RecordingPaymentStarter,
} from '../support/webhook';

const NOW_MS = 1_700_000_000_000;
const NOW_S = NOW_MS / 1000;
const PREVIOUS_SECRET = 'previous-webhook-secret';

/** An app on a clock the test moves, with its recording starter; closed after each test. */
let opened: FastifyInstance[] = [];
async function setUp(config: Parameters<typeof buildWebhookApp>[0]['config'] = {}) {
  let now = NOW_MS;
  const payments = recordingPaymentStarter();
  const app = await buildWebhookApp({ config, payments, now: () => now });
  opened.push(app);
  return { app, payments, advance: (ms: number) => (now += ms) };
}
afterEach(async () => {
  await Promise.all(opened.map((app) => app.close()));
  opened = [];
});

const startedIds = (payments: RecordingPaymentStarter) => payments.starts.map((s) => s.eventId);

describe('timestamped signature scheme', () => {
  const timestamped = {
    WEBHOOK_SIGNATURE_SCHEME: 'timestamped',
    WEBHOOK_TOLERANCE_SECONDS: 300,
  } as const;

  it('accepts a request signed over "<timestamp>.<body>" within the window', async () => {
    const { app, payments } = await setUp(timestamped);
    const event = paymentEvent();
    const res = await deliverWebhook(app, event, { timestamp: NOW_S - 299 });
    expect(res.statusCode).toBe(200);
    expect(startedIds(payments)).toEqual([event.id]);
  });

  it('refuses a replay outside the window with 401 and a reason, starting nothing', async () => {
    const { app, payments, advance } = await setUp(timestamped);
    const event = paymentEvent({ event: 'payment.failed' });
    const first = await deliverWebhook(app, event, { timestamp: NOW_S });
    expect(first.json()).toEqual({ status: 'ignored' });

    // The same bytes and headers, captured and sent again six minutes later.
    advance(301_000);
    const replay = await deliverWebhook(app, event, { timestamp: NOW_S });
    expect(replay.statusCode).toBe(401);
    expect(replay.json()).toEqual({
      error: 'X-Payment-Timestamp is outside the 300 s tolerance window',
    });

    const payment = paymentEvent();
    const late = await deliverWebhook(app, payment, { timestamp: NOW_S });
    expect(late.statusCode).toBe(401);
    expect(payments.starts).toEqual([]);
  });

  it('refuses a request without X-Payment-Timestamp, or signed the plain way', async () => {
    const { app, payments } = await setUp(timestamped);
    const plain = await deliverWebhook(app, paymentEvent());
    expect(plain.statusCode).toBe(401);
    expect(plain.json()).toEqual({ error: 'missing X-Payment-Timestamp header' });

    const raw = JSON.stringify(paymentEvent());
    const mixed = await deliverWebhook(app, raw, {
      signature: signBody(raw, TEST_WEBHOOK_SECRET),
      headers: { 'x-payment-timestamp': String(NOW_S) },
    });
    expect(mixed.json()).toEqual({ error: 'invalid signature' });
    expect(payments.starts).toEqual([]);
  });

  it('is off by default: the contract scheme signs the body alone', async () => {
    const { app, payments } = await setUp();
    const event = paymentEvent();
    const res = await deliverWebhook(app, event, {
      headers: { 'x-payment-timestamp': String(NOW_S - 86_400) },
    });
    expect(res.statusCode).toBe(200);
    expect(startedIds(payments)).toEqual([event.id]);
  });
});

describe('repeated signature headers', () => {
  it('refuses two X-Payment-Signature headers with 401 and says one is allowed, even if both are right', async () => {
    const { app, payments } = await setUp();
    const raw = JSON.stringify(paymentEvent());
    const good = signBody(raw, TEST_WEBHOOK_SECRET);
    for (const signatures of [
      [good, good],
      [good, '0'.repeat(64)],
      ['', good],
    ]) {
      const res = await deliverWebhook(app, raw, {
        signature: null,
        headers: {
          'x-payment-signature': signatures,
        },
      });
      expectRefused(res, 401, 'exactly one X-Payment-Signature header is allowed');
    }
    expect(payments.starts).toEqual([]);
  });

  it('refuses two X-Payment-Timestamp headers of the timestamped scheme the same way', async () => {
    const { app, payments } = await setUp({
      WEBHOOK_SIGNATURE_SCHEME: 'timestamped',
      WEBHOOK_TOLERANCE_SECONDS: 300,
    });
    const res = await deliverWebhook(app, paymentEvent(), {
      timestamp: NOW_S,
      headers: { 'x-payment-timestamp': [String(NOW_S), String(NOW_S)] },
    });
    expectRefused(res, 401, 'exactly one X-Payment-Timestamp header is allowed');
    expect(payments.starts).toEqual([]);
  });
});

describe('secret rotation', () => {
  it('accepts the current and the previous secret, and only those', async () => {
    const { app, payments } = await setUp({ PAYMENT_WEBHOOK_SECRET_PREVIOUS: PREVIOUS_SECRET });
    const withCurrent = paymentEvent();
    const withPrevious = paymentEvent();
    const withOther = paymentEvent();
    expect((await deliverWebhook(app, withCurrent)).statusCode).toBe(200);
    expect((await deliverWebhook(app, withPrevious, { secret: PREVIOUS_SECRET })).statusCode).toBe(
      200,
    );
    expect((await deliverWebhook(app, withOther, { secret: 'another-secret' })).statusCode).toBe(
      401,
    );
    expect(startedIds(payments)).toEqual([withCurrent.id, withPrevious.id]);
  });

  it('refuses the previous secret once it is removed from the configuration', async () => {
    const { app, payments } = await setUp();
    const res = await deliverWebhook(app, paymentEvent(), { secret: PREVIOUS_SECRET });
    expect(res.statusCode).toBe(401);
    expect(payments.starts).toEqual([]);
  });
});

describe('rate limit on failed signature checks', () => {
  const limited = { WEBHOOK_AUTH_FAILURE_LIMIT: 5, WEBHOOK_AUTH_FAILURE_WINDOW_SECONDS: 60 };
  const attacker = '203.0.113.66';
  const provider = '198.51.100.10';

  async function failFrom(app: FastifyInstance, ip: string, times: number) {
    for (let i = 0; i < times; i++) {
      const res = await deliverWebhook(app, paymentEvent(), {
        signature: '0'.repeat(64),
        remoteAddress: ip,
      });
      expect(res.statusCode).toBe(401);
    }
  }

  it('answers 429 with Retry-After once a client used up its budget of failures', async () => {
    const { app, advance } = await setUp(limited);
    await failFrom(app, attacker, 4);
    advance(10_000);
    await failFrom(app, attacker, 1);

    const refused = await deliverWebhook(app, paymentEvent(), {
      signature: 'f'.repeat(64),
      remoteAddress: attacker,
    });
    expect(refused.statusCode).toBe(429);
    expect(refused.headers['retry-after']).toBe('50');
    expect(refused.json()).toEqual({ error: 'too many requests with a failed signature check' });

    // Told to wait 50 s: then the four failures of the first second have left the window
    // (the window slides, it does not reset), and four attempts are free again.
    advance(50_000);
    await failFrom(app, attacker, 4);
    const again = await deliverWebhook(app, paymentEvent(), { remoteAddress: attacker });
    expect(again.statusCode).toBe(429);
    expect(again.headers['retry-after']).toBe('10');
  });

  it('refuses before reading the body: an oversized body gets 429, not 413', async () => {
    const { app, payments } = await setUp({ ...limited, WEBHOOK_BODY_LIMIT_BYTES: 1024 });
    await failFrom(app, attacker, 5);
    const res = await deliverWebhook(app, 'x'.repeat(100_000), { remoteAddress: attacker });
    expect(res.statusCode).toBe(429);
    expect(payments.starts).toEqual([]);
  });

  it('never limits valid requests: a provider burst far over the budget is all accepted', async () => {
    const { app, payments } = await setUp(limited);
    const events = Array.from({ length: 300 }, () => paymentEvent());
    const replies = await Promise.all(
      events.map((e) => deliverWebhook(app, e, { remoteAddress: provider })),
    );
    expect(replies.filter((r) => r.statusCode === 200)).toHaveLength(300);
    expect(payments.starts).toHaveLength(300);
  });

  it("does not let one client's failures refuse another client", async () => {
    const { app, payments } = await setUp(limited);
    await failFrom(app, attacker, 5);
    expect(
      (await deliverWebhook(app, paymentEvent(), { remoteAddress: attacker })).statusCode,
    ).toBe(429);
    const event = paymentEvent();
    expect((await deliverWebhook(app, event, { remoteAddress: provider })).statusCode).toBe(200);
    expect(startedIds(payments)).toEqual([event.id]);
  });

  it('does not count oversized bodies or bad payloads with a valid signature', async () => {
    const { app } = await setUp({ ...limited, WEBHOOK_BODY_LIMIT_BYTES: 1024 });
    for (let i = 0; i < 10; i++) {
      const big = await deliverWebhook(app, 'x'.repeat(2000), { remoteAddress: provider });
      expect(big.statusCode).toBe(413);
      const malformed = await deliverWebhook(app, '{"id":', { remoteAddress: provider });
      expect(malformed.statusCode).toBe(400);
    }
    expect(
      (await deliverWebhook(app, paymentEvent(), { remoteAddress: provider })).statusCode,
    ).toBe(200);
  });

  it('counts clients behind a trusted proxy by X-Forwarded-For (HTTP_TRUST_PROXY)', async () => {
    const proxy = '10.0.0.2';
    const behind = (forwardedFor: string) => ({
      remoteAddress: proxy,
      headers: { 'x-forwarded-for': forwardedFor },
    });

    // Untrusted: everyone behind the proxy is the proxy, so one attacker refuses the provider.
    const untrusted = await setUp(limited);
    await failFrom(untrusted.app, proxy, 5);
    expect((await deliverWebhook(untrusted.app, paymentEvent(), behind(provider))).statusCode).toBe(
      429,
    );

    const { app } = await setUp({ ...limited, HTTP_TRUST_PROXY: ['10.0.0.0/8'] });
    for (let i = 0; i < 5; i++) {
      const res = await deliverWebhook(app, paymentEvent(), {
        ...behind(attacker),
        signature: '0'.repeat(64),
      });
      expect(res.statusCode).toBe(401);
    }
    expect((await deliverWebhook(app, paymentEvent(), behind(attacker))).statusCode).toBe(429);
    expect((await deliverWebhook(app, paymentEvent(), behind(provider))).statusCode).toBe(200);
  });

  it('can be turned off with a limit of 0', async () => {
    const { app } = await setUp({ WEBHOOK_AUTH_FAILURE_LIMIT: 0 });
    await failFrom(app, attacker, 100);
  });
});

describe('content type and encoding claims', () => {
  it.each([
    ['no content type', undefined],
    ['an empty one', ''],
    ['an unparseable one', ';;;'],
    ['three slashes', 'a/b/c'],
    ['a form', 'application/x-www-form-urlencoded'],
    ['a non-ASCII one', 'ü/ü'],
  ])('accepts a signed event whatever type it claims: %s', async (_label, contentType) => {
    const { app, payments } = await setUp();
    const event = paymentEvent();
    const raw = JSON.stringify(event);
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/webhooks/payment',
      payload: raw,
      headers: {
        'x-payment-signature': signBody(raw, TEST_WEBHOOK_SECRET),
        ...(contentType === undefined ? {} : { 'content-type': contentType }),
      },
    });
    expect(res.statusCode).toBe(200);
    expect(startedIds(payments)).toEqual([event.id]);
  });

  it('treats a Content-Encoding claim as a label: the signature is over the bytes received', async () => {
    const { app, payments } = await setUp();
    const event = paymentEvent();
    const res = await deliverWebhook(app, event, { headers: { 'content-encoding': 'gzip' } });
    expect(res.statusCode).toBe(200);
    expect(startedIds(payments)).toEqual([event.id]);
  });
});
