import crypto from 'node:crypto';
import { signBody, signTimestamped } from '../../src/http/signature';
import { createWebhookVerifier, type WebhookAuthOptions } from '../../src/http/webhook-auth';

const current = 'current-secret-0123456789';
const previous = 'previous-secret-0123456789';
const body = Buffer.from('{"id":"evt_1","event":"payment.succeeded","order_id":1,"amount":5400}');
const NOW_MS = 1_700_000_000_000;
const nowSeconds = NOW_MS / 1000;

type Headers = Record<string, string | string[] | undefined>;

/** Header lines as Node's rawHeaders holds them: an array is the header sent once per value. */
function linesOf(headers: Headers): string[] {
  return Object.entries(headers).flatMap(([name, value]) =>
    value === undefined ? [] : [value].flat().flatMap((v) => [name, v]),
  );
}

function verifier(overrides: Partial<WebhookAuthOptions> = {}) {
  const verify = createWebhookVerifier({
    scheme: 'plain',
    secret: current,
    toleranceSeconds: 300,
    now: () => NOW_MS,
    ...overrides,
  });
  return (rawBody: Buffer, headers: Headers) => verify(rawBody, linesOf(headers));
}

describe('plain scheme (HMAC of the raw body, the contract)', () => {
  const verify = verifier({ previousSecret: previous });

  it('accepts the current secret and says so', () => {
    expect(verify(body, { 'x-payment-signature': signBody(body, current) })).toEqual({
      ok: true,
      matchedSecret: 'current',
    });
  });

  it('accepts the previous secret during a rotation and says so', () => {
    expect(verify(body, { 'x-payment-signature': signBody(body, previous) })).toEqual({
      ok: true,
      matchedSecret: 'previous',
    });
  });

  it('refuses the previous secret once it is no longer configured', () => {
    const afterRotation = verifier();
    expect(afterRotation(body, { 'x-payment-signature': signBody(body, previous) })).toEqual({
      ok: false,
      reason: 'invalid signature',
    });
  });

  it('refuses any other secret', () => {
    expect(verify(body, { 'x-payment-signature': signBody(body, 'a-third-secret') })).toEqual({
      ok: false,
      reason: 'invalid signature',
    });
  });

  it('accepts uppercase hex and surrounding whitespace: the same bytes', () => {
    const signature = signBody(body, current);
    expect(verify(body, { 'x-payment-signature': signature.toUpperCase() }).ok).toBe(true);
    expect(verify(body, { 'x-payment-signature': ` \t${signature} ` }).ok).toBe(true);
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['only whitespace', '   '],
  ])('refuses a signature header that is %s as missing', (_label, value) => {
    expect(verify(body, { 'x-payment-signature': value })).toEqual({
      ok: false,
      reason: 'missing X-Payment-Signature header',
    });
  });

  it('refuses two signature headers, even when both are right, saying one is allowed', () => {
    const good = signBody(body, current);
    for (const values of [
      [good, good],
      [good, 'f'.repeat(64)],
      ['', good],
    ]) {
      expect(verify(body, { 'x-payment-signature': values })).toEqual({
        ok: false,
        reason: 'exactly one X-Payment-Signature header is allowed',
      });
    }
    // The name in another case is the same header.
    expect(verify(body, { 'x-payment-signature': good, 'X-Payment-Signature': good })).toEqual({
      ok: false,
      reason: 'exactly one X-Payment-Signature header is allowed',
    });
  });

  it('takes one header line holding a comma as one (invalid) signature', () => {
    const good = signBody(body, current);
    expect(verify(body, { 'x-payment-signature': `${good}, ${good}` })).toEqual({
      ok: false,
      reason: 'invalid signature',
    });
  });

  it('ignores X-Payment-Timestamp: the plain scheme does not sign it', () => {
    expect(
      verify(body, { 'x-payment-signature': signBody(body, current), 'x-payment-timestamp': 'x' })
        .ok,
    ).toBe(true);
  });

  it('compares against every configured secret even when the first one matched', () => {
    const compare = jest.spyOn(crypto, 'timingSafeEqual');
    try {
      expect(verify(body, { 'x-payment-signature': signBody(body, current) }).ok).toBe(true);
      expect(compare).toHaveBeenCalledTimes(2);
    } finally {
      compare.mockRestore();
    }
  });
});

describe('timestamped scheme (HMAC of "<timestamp>.<raw body>")', () => {
  const verify = verifier({ scheme: 'timestamped', previousSecret: previous });
  const signed = (timestamp: number | string, secret = current) => ({
    'x-payment-timestamp': String(timestamp),
    'x-payment-signature': signTimestamped(body, timestamp, secret),
  });

  it('signs exactly "<timestamp>.<raw body>"', () => {
    const expected = crypto
      .createHmac('sha256', current)
      .update(`${nowSeconds}.${body.toString()}`)
      .digest('hex');
    expect(signTimestamped(body, nowSeconds, current)).toBe(expected);
  });

  const accepted = { ok: true, matchedSecret: 'current' };
  const outsideTolerance = {
    ok: false,
    reason: 'X-Payment-Timestamp is outside the 300 s tolerance window',
  };
  it.each([
    ['now is accepted', 0, accepted],
    ['300 s ago (the edge) is accepted', -300, accepted],
    ['300 s ahead (the edge) is accepted', 300, accepted],
    ['301 s old (a replay) is refused, the tolerance as reason', -301, outsideTolerance],
    ['a day old is refused, the tolerance as reason', -86_400, outsideTolerance],
    ['301 s in the future is refused, the tolerance as reason', 301, outsideTolerance],
  ])('a genuine request signed %s', (_label, offset, verdict) => {
    expect(verify(body, signed(nowSeconds + offset))).toEqual(verdict);
  });

  it('accepts the previous secret during a rotation', () => {
    expect(verify(body, signed(nowSeconds, previous))).toEqual({
      ok: true,
      matchedSecret: 'previous',
    });
  });

  it('refuses a timestamp refreshed after signing (the MAC covers it)', () => {
    const stale = signed(nowSeconds - 3600);
    expect(verify(body, { ...stale, 'x-payment-timestamp': String(nowSeconds) })).toEqual({
      ok: false,
      reason: 'invalid signature',
    });
  });

  it('refuses a plain body signature: the schemes do not mix', () => {
    expect(
      verify(body, {
        'x-payment-timestamp': String(nowSeconds),
        'x-payment-signature': signBody(body, current),
      }),
    ).toEqual({ ok: false, reason: 'invalid signature' });
  });

  it('refuses leading zeros unless they were signed: the MAC covers the digits as sent', () => {
    const headers = signed(nowSeconds);
    expect(verify(body, { ...headers, 'x-payment-timestamp': `0${nowSeconds}` }).ok).toBe(false);
    expect(verify(body, signed(`0${nowSeconds}`)).ok).toBe(true);
  });

  it('gives no tolerance reason for a forged request: a wrong MAC is just invalid', () => {
    expect(verify(body, signed(nowSeconds - 3600, 'wrong-secret'))).toEqual({
      ok: false,
      reason: 'invalid signature',
    });
  });

  it('refuses a missing or repeated timestamp header', () => {
    const { 'x-payment-signature': signature } = signed(nowSeconds);
    expect(verify(body, { 'x-payment-signature': signature })).toEqual({
      ok: false,
      reason: 'missing X-Payment-Timestamp header',
    });
    expect(
      verify(body, {
        'x-payment-signature': signature,
        'x-payment-timestamp': [String(nowSeconds), String(nowSeconds)],
      }),
    ).toEqual({ ok: false, reason: 'exactly one X-Payment-Timestamp header is allowed' });
  });

  it.each([
    ['not a number', 'yesterday'],
    ['negative', '-1700000000'],
    ['fractional', `${nowSeconds}.5`],
    ['milliseconds (13 digits)', String(NOW_MS)],
    ['exponent', '1.7e9'],
    ['plus sign', `+${nowSeconds}`],
  ])('refuses a timestamp that is %s with a reason', (_label, timestamp) => {
    expect(verify(body, signed(timestamp))).toEqual({
      ok: false,
      reason: 'X-Payment-Timestamp must be a Unix time in seconds',
    });
  });
});
