import { createHmac } from 'node:crypto';
import { isValidSignature, matchingSecret, signBody } from '../../src/http/signature';

const secret = 'test-secret';
const body = Buffer.from('{"id":"evt_1","event":"payment.succeeded","order_id":1,"amount":5400}');

describe('webhook signature', () => {
  it('accepts the lowercase hex HMAC-SHA256 of the raw body', () => {
    const expected = createHmac('sha256', secret).update(body).digest('hex');
    expect(signBody(body, secret)).toBe(expected);
    expect(isValidSignature(body, expected, secret)).toBe(true);
  });

  it('rejects a signature made with another secret', () => {
    expect(isValidSignature(body, signBody(body, 'other-secret'), secret)).toBe(false);
  });

  it('rejects a signature of a re-serialised body (whitespace changes the digest)', () => {
    const reformatted = Buffer.from(JSON.stringify(JSON.parse(body.toString()), null, 2));
    expect(isValidSignature(reformatted, signBody(body, secret), secret)).toBe(false);
  });

  it.each([
    ['empty', ''],
    ['too short', 'abcd'],
    ['not hex', 'z'.repeat(64)],
    ['too long', signBody(body, secret) + '00'],
    ['truncated valid prefix', signBody(body, secret).slice(0, 63)],
  ])('rejects a malformed signature (%s) without throwing', (_label, signature) => {
    expect(isValidSignature(body, signature, secret)).toBe(false);
  });

  it('names the first secret that matches, when the same secret is configured twice', () => {
    // A rotation left half done (previous = current) must still report the current secret.
    expect(matchingSecret([body], signBody(body, secret), [secret, secret])).toBe(0);
    expect(matchingSecret([body], signBody(body, secret), ['other', secret, secret])).toBe(1);
    expect(matchingSecret([body], signBody(body, secret), ['other', 'another'])).toBe(-1);
  });
});
