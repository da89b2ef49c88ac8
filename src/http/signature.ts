import { createHmac, timingSafeEqual } from 'node:crypto';

const HEX_SHA256 = /^[0-9a-f]{64}$/i;

/** Lowercase hex HMAC-SHA256 of the raw body, as the provider computes it. */
export function signBody(body: Buffer | string, secret: string): string {
  return createHmac('sha256', secret).update(body).digest('hex');
}

/**
 * Checks the provider's signature over the exact bytes received (never a re-serialised body:
 * key order or whitespace would change the digest). The comparison is constant-time so the
 * response time does not reveal how many leading bytes were right.
 */
export function isValidSignature(rawBody: Buffer, signature: string, secret: string): boolean {
  if (!HEX_SHA256.test(signature)) return false;
  const expected = createHmac('sha256', secret).update(rawBody).digest();
  return timingSafeEqual(expected, Buffer.from(signature, 'hex'));
}
