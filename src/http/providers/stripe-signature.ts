import { createHmac } from 'node:crypto';
import { singleHeader } from '../webhook-auth';
import { firstMatchingKey, type ProviderVerifier, secretLabel, UNIX_SECONDS } from './provider';

export const STRIPE_SIGNATURE_HEADER = 'stripe-signature';

/** Stripe's own default (the `stripe` package's DEFAULT_TOLERANCE). */
export const STRIPE_DEFAULT_TOLERANCE_SECONDS = 300;

export interface StripeSignatureOptions {
  /** The endpoint's signing secrets (`whsec_…`), current first; two during a roll. */
  secrets: readonly string[];
  /** How old a signature's `t` may be. */
  toleranceSeconds: number;
  /** Milliseconds since the epoch; injectable for tests. */
  now?: () => number;
}

export type StripeSignatureHeader =
  { ok: true; timestamp: number; signatures: Buffer[] } | { ok: false; reason: string };

// A v1 signature is the lowercase hex HMAC-SHA256 Stripe sends; Stripe's library compares the
// hex text, so an uppercase digit matches nothing there, and nothing here.
const V1_SIGNATURE = /^[0-9a-f]{64}$/;
// eslint-disable-next-line no-control-regex
const NON_ASCII = /[^\x00-\x7f]/;

/**
 * Reads `t=<unix>,v1=<hex>[,v1=<hex>…][,v0=…]` as Stripe's library does: items split on `,`,
 * each `key=value`; `v1` is the only scheme checked (`v0`, test-mode only, and unknown keys are
 * ignored, so a future scheme does not break deliveries); a v1 value that is not a signature
 * can match nothing and is skipped. Stricter than the library only where it would read garbage
 * as a time: `t` must be digits, and once.
 */
export function parseStripeSignature(value: string): StripeSignatureHeader {
  const timestamps: string[] = [];
  const signatures: Buffer[] = [];
  let sawV1 = false;
  let unreadableV1 = false;
  for (const item of value.split(',')) {
    const [key, text] = item.split('=');
    if (key === 't') timestamps.push(text ?? '');
    if (key === 'v1') {
      sawV1 = true;
      // Stripe's library throws on these, refusing the whole header, where it merely skips
      // other malformed v1 values: a missing or empty value, or 64 characters that are not
      // all ASCII (their UTF-8 is longer than its digest's). So do we: the library wins.
      if (text === undefined || text === '' || (text.length === 64 && NON_ASCII.test(text))) {
        unreadableV1 = true;
      } else if (V1_SIGNATURE.test(text)) signatures.push(Buffer.from(text, 'hex'));
    }
  }
  if (unreadableV1) return { ok: false, reason: 'Stripe-Signature has a v1 that is no signature' };
  if (timestamps.length !== 1) {
    return {
      ok: false,
      reason:
        timestamps.length === 0
          ? 'Stripe-Signature has no timestamp (t=)'
          : 'Stripe-Signature has more than one timestamp (t=)',
    };
  }
  const [timestamp] = timestamps as [string];
  if (!UNIX_SECONDS.test(timestamp)) {
    return { ok: false, reason: 'Stripe-Signature t= must be a Unix time in seconds' };
  }
  if (!sawV1) return { ok: false, reason: 'Stripe-Signature has no v1 signature' };
  return { ok: true, timestamp: Number(timestamp), signatures };
}

/**
 * The check of `Stripe-Signature` on the raw body: HMAC-SHA256 of `<t>.<raw body>` keyed with
 * the whole `whsec_…` secret, against every v1 of the header (Stripe sends one per active secret
 * while the endpoint's secret is being rolled) and every configured secret, then the age of `t`.
 */
export function createStripeVerifier(options: StripeSignatureOptions): ProviderVerifier {
  const now = options.now ?? Date.now;
  return (rawBody, rawHeaders) => {
    const header = singleHeader(rawHeaders, STRIPE_SIGNATURE_HEADER, 'Stripe-Signature');
    if (!header.ok) return header;
    const parsed = parseStripeSignature(header.value);
    if (!parsed.ok) return parsed;

    // The library signs the number it parsed from t, so `t=0123` stands for 123 here too.
    const signed = (secret: string) =>
      createHmac('sha256', secret).update(`${parsed.timestamp}.`).update(rawBody).digest();
    const index = firstMatchingKey(options.secrets.map(signed), parsed.signatures);
    if (index === -1) return { ok: false, reason: 'invalid signature' };

    // After the MAC, so this reason only answers a request Stripe really signed (a replay, or
    // a skewed clock). Only age is checked, as Stripe's library does: a future t can only come
    // from whoever holds the secret, who could sign any t anyway.
    const ageSeconds = Math.floor(now() / 1000) - parsed.timestamp;
    if (ageSeconds > options.toleranceSeconds) {
      return {
        ok: false,
        reason: `Stripe-Signature timestamp is older than the ${options.toleranceSeconds} s tolerance`,
      };
    }
    return { ok: true, matchedSecret: secretLabel(index) };
  };
}
