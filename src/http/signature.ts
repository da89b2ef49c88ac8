import { createHmac, timingSafeEqual } from 'node:crypto';

const HEX_SHA256 = /^[0-9a-f]{64}$/i;

/** Lowercase hex HMAC-SHA256 of the raw body, as the provider computes it (the plain scheme). */
export function signBody(body: Buffer | string, secret: string): string {
  return hmac(secret, [body]).toString('hex');
}

/**
 * Lowercase hex HMAC-SHA256 of `<timestamp>.<raw body>` (the timestamped scheme): binding the
 * timestamp into the MAC is what stops an attacker from refreshing an old request's timestamp.
 */
export function signTimestamped(
  body: Buffer | string,
  timestamp: number | string,
  secret: string,
): string {
  return hmac(secret, [`${timestamp}.`, body]).toString('hex');
}

/**
 * Checks the provider's signature over the exact bytes received (never a re-serialised body:
 * key order or whitespace would change the digest). The comparison is constant-time so the
 * response time does not reveal how many leading bytes were right.
 */
export function isValidSignature(rawBody: Buffer, signature: string, secret: string): boolean {
  return matchingSecret([rawBody], signature, [secret]) === 0;
}

/**
 * Index of the secret whose HMAC over `signedParts` (concatenated) equals the hex `signature`,
 * or -1. Every secret is tried and compared in constant time, whichever matches, so neither
 * the digest bytes nor which secret matched show in the response time. Hex is accepted in
 * either case: it names the same bytes.
 */
export function matchingSecret(
  signedParts: readonly (Buffer | string)[],
  signature: string,
  secrets: readonly string[],
): number {
  if (!HEX_SHA256.test(signature)) return -1;
  const given = Buffer.from(signature, 'hex');
  let match = -1;
  secrets.forEach((secret, index) => {
    const equal = timingSafeEqual(hmac(secret, signedParts), given);
    if (equal && match === -1) match = index;
  });
  return match;
}

function hmac(secret: string, parts: readonly (Buffer | string)[]): Buffer {
  const mac = createHmac('sha256', secret);
  for (const part of parts) mac.update(part);
  return mac.digest();
}
