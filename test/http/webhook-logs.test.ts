import type { FastifyInstance } from 'fastify';
import { signBody, signTimestamped } from '../../src/http/signature';
import { capturingLogger } from '../support/capturing-logger';
import {
  buildWebhookApp,
  deliverWebhook,
  paymentEvent,
  recordingPaymentStarter,
  TEST_WEBHOOK_SECRET,
  type DeliveryOptions,
} from '../support/webhook';

const PREVIOUS_SECRET = 'previous-secret-never-logged';
const FORGER_SECRET = 'forger-secret-never-logged';
// Distinctive bytes inside bodies: if any part of a body reached a log line, this would.
const CANARY = 'CANARY-body-bytes-7f3a9c';

interface Sent {
  raw: string | Buffer;
  options: DeliveryOptions;
}

describe('webhook logs carry no secrets, signatures or bodies', () => {
  let app: FastifyInstance;
  let lines: string[];
  const sent: Sent[] = [];
  const NOW_S = 1_700_000_000;

  async function send(body: unknown, options: DeliveryOptions = {}, target = app) {
    const raw = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
    sent.push({ raw, options });
    return deliverWebhook(target, raw, options);
  }

  beforeAll(async () => {
    const captured = capturingLogger();
    lines = captured.lines;
    const shared = {
      logger: captured.logger,
      payments: recordingPaymentStarter(),
      now: () => NOW_S * 1000,
    };
    app = await buildWebhookApp({
      ...shared,
      config: {
        PAYMENT_WEBHOOK_SECRET_PREVIOUS: PREVIOUS_SECRET,
        WEBHOOK_BODY_LIMIT_BYTES: 2048,
        WEBHOOK_AUTH_FAILURE_LIMIT: 8,
      },
    });
    const timestamped = await buildWebhookApp({
      ...shared,
      config: { WEBHOOK_SIGNATURE_SCHEME: 'timestamped' },
    });

    const withCanary = (overrides = {}) => ({ ...paymentEvent(overrides), note: CANARY });
    const first = withCanary();
    const statuses = [
      // Valid: accepted with either secret, a duplicate, an ignored event type.
      (await send(first)).statusCode,
      (await send(withCanary(), { secret: PREVIOUS_SECRET })).statusCode,
      (await send(first)).statusCode,
      (await send(withCanary({ event: 'payment.failed' }))).statusCode,
      // The same event ID with another amount: a conflict, logged with both amounts.
      (await send({ ...first, amount: first.amount + 1 })).statusCode,
      // Invalid signatures of every kind (one of them: the secret itself as the signature).
      (await send(withCanary(), { secret: FORGER_SECRET })).statusCode,
      (await send(withCanary(), { signature: TEST_WEBHOOK_SECRET })).statusCode,
      (await send(withCanary(), { signature: PREVIOUS_SECRET })).statusCode,
      (await send(withCanary(), { signature: signBody(CANARY, TEST_WEBHOOK_SECRET) })).statusCode,
      (await send(withCanary(), { signature: null })).statusCode,
      (await send(withCanary(), { headers: { 'x-payment-signature': [CANARY, CANARY] } }))
        .statusCode,
      // Hostile bodies, validly signed: malformed JSON, bad UTF-8, wrong shapes, too large.
      (await send(`{"id": "${CANARY}", "event": `)).statusCode,
      (await send(Buffer.concat([Buffer.from(`{"${CANARY}":"`), Buffer.from([0xff, 0xfe])])))
        .statusCode,
      (await send(withCanary({ amount: -1 }))).statusCode,
      (await send(`{"__proto__":{"event":"payment.succeeded"},"${CANARY}":1}`)).statusCode,
      (await send(`${CANARY}`.repeat(200))).statusCode,
      // The timestamped scheme: good, replayed, forged.
      (await send(withCanary(), { timestamp: NOW_S }, timestamped)).statusCode,
      (await send(withCanary(), { timestamp: NOW_S - 3600 }, timestamped)).statusCode,
      (await send(withCanary(), { timestamp: NOW_S, secret: FORGER_SECRET }, timestamped))
        .statusCode,
    ];
    // Push the client over its failure budget so the 429 path logs too.
    for (let i = 0; i < 10; i++) {
      statuses.push((await send(withCanary(), { secret: FORGER_SECRET })).statusCode);
    }
    await timestamped.close();
    expect(statuses.slice(0, 19)).toEqual([
      200, 200, 200, 200, 409, 401, 401, 401, 401, 401, 401, 400, 400, 400, 400, 413, 200, 401, 401,
    ]);
    expect(statuses).toContain(429);
  });

  afterAll(async () => {
    await app?.close();
  });

  it('logged the requests at all (the capture works)', () => {
    expect(lines.length).toBeGreaterThan(50);
    expect(lines.some((l) => l.includes('invalid signature'))).toBe(true);
    expect(
      lines.filter((l) =>
        l.includes('webhook: client used up its budget of failed signature checks'),
      ),
    ).toHaveLength(1);
    expect(lines.some((l) => l.includes('different body'))).toBe(true);
  });

  it('never logs a secret', () => {
    for (const secret of [TEST_WEBHOOK_SECRET, PREVIOUS_SECRET, FORGER_SECRET]) {
      expect(lines.filter((l) => l.includes(secret))).toEqual([]);
    }
  });

  it('never logs a signature header value, nor the digest it should have been', () => {
    const signatures = new Set<string>();
    for (const { raw, options } of sent) {
      const header = options.headers?.['x-payment-signature'];
      if (typeof options.signature === 'string') signatures.add(options.signature);
      if (Array.isArray(header)) header.forEach((h) => signatures.add(h));
      for (const secret of [TEST_WEBHOOK_SECRET, PREVIOUS_SECRET, FORGER_SECRET]) {
        signatures.add(signBody(raw, secret));
        if (options.timestamp !== undefined) {
          signatures.add(signTimestamped(raw, options.timestamp, secret));
        }
      }
    }
    expect(signatures.size).toBeGreaterThan(60);
    for (const signature of signatures) {
      expect(lines.filter((l) => l.includes(signature))).toEqual([]);
    }
  });

  it('never logs body bytes', () => {
    expect(lines.filter((l) => l.includes(CANARY))).toEqual([]);
    for (const { raw } of sent) {
      const text = raw.toString();
      expect(lines.filter((l) => l.includes(text))).toEqual([]);
    }
  });

  it('says which secret verified each accepted request', () => {
    const matched = lines
      .map((l) => JSON.parse(l) as { matchedSecret?: string; msg: string })
      .filter((l) => l.matchedSecret !== undefined)
      .map((l) => l.matchedSecret);
    // The conflict's warning says it too: which secret signed the suspicious body matters.
    expect(matched).toEqual(['current', 'previous', 'current', 'current', 'current', 'current']);
  });

  it('writes one access line per request, when it completes, with method, URL, status and time', () => {
    const entries = lines.map(
      (l) =>
        JSON.parse(l) as {
          reqId?: string;
          msg: string;
          req?: { method?: string; url?: string };
          res?: { statusCode?: number };
          responseTime?: number;
        },
    );
    expect(entries.filter((e) => e.msg === 'incoming request')).toEqual([]);
    const access = entries.filter((e) => e.msg === 'request completed');
    // One per request sent, whatever its outcome (ignored, refused, conflicting, rate-limited).
    expect(access).toHaveLength(sent.length);
    for (const e of access) {
      expect(e.req).toMatchObject({ method: 'POST', url: '/api/v1/webhooks/payment' });
      expect(e.res?.statusCode).toEqual(expect.any(Number));
      expect(e.responseTime).toBeGreaterThanOrEqual(0);
    }
    expect(access.map((e) => e.res?.statusCode)).toEqual(
      expect.arrayContaining([200, 401, 409, 429]),
    );
  });
});
