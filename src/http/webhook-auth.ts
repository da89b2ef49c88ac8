import { headerLines } from './header-lines';
import { matchingSecret } from './signature';

export const SIGNATURE_HEADER = 'x-payment-signature';
export const TIMESTAMP_HEADER = 'x-payment-timestamp';

/**
 * `plain`: the contract's scheme, HMAC-SHA256 of the raw body. `timestamped`: HMAC-SHA256 of
 * `<X-Payment-Timestamp>.<raw body>`, refused outside a tolerance window so a captured request
 * cannot be replayed later.
 */
export type SignatureScheme = 'plain' | 'timestamped';

/** Which configured secret verified the request: logged so a rotation's progress is visible. */
export type MatchedSecret = 'current' | 'previous';

export interface WebhookAuthOptions {
  scheme: SignatureScheme;
  secret: string;
  /** The secret being rotated out, accepted until the provider has switched to `secret`. */
  previousSecret?: string;
  /** Allowed distance, either way, between X-Payment-Timestamp and `now()` (timestamped only). */
  toleranceSeconds: number;
  /** Milliseconds since the epoch; injectable for tests. */
  now?: () => number;
}

export type WebhookAuthResult =
  | { ok: true; matchedSecret: MatchedSecret }
  /** `reason` is safe for the client: it never contains a secret, a digest or the body. */
  | { ok: false; reason: string };

/** `rawHeaders`: the request's header lines as received (`request.raw.rawHeaders`). */
export type WebhookVerifier = (rawBody: Buffer, rawHeaders: readonly string[]) => WebhookAuthResult;

// Unix seconds: ten digits until the year 2286; twelve leaves room without allowing absurd values.
const UNIX_SECONDS = /^[0-9]{1,12}$/;

/** Builds the check the webhook runs on every request, before it reads a byte of the payload. */
export function createWebhookVerifier(options: WebhookAuthOptions): WebhookVerifier {
  const now = options.now ?? Date.now;
  const secrets =
    options.previousSecret === undefined
      ? [options.secret]
      : [options.secret, options.previousSecret];

  return (rawBody, rawHeaders) => {
    const signature = singleHeader(rawHeaders, SIGNATURE_HEADER, 'X-Payment-Signature');
    if (!signature.ok) return signature;

    let signedParts: (Buffer | string)[] = [rawBody];
    let timestamp: number | undefined;
    if (options.scheme === 'timestamped') {
      const header = singleHeader(rawHeaders, TIMESTAMP_HEADER, 'X-Payment-Timestamp');
      if (!header.ok) return header;
      if (!UNIX_SECONDS.test(header.value)) {
        return { ok: false, reason: 'X-Payment-Timestamp must be a Unix time in seconds' };
      }
      // The MAC covers the digits exactly as sent, so leading zeros cannot be used to re-sign.
      signedParts = [`${header.value}.`, rawBody];
      timestamp = Number(header.value);
    }

    const index = matchingSecret(signedParts, signature.value, secrets);
    if (index === -1) return { ok: false, reason: 'invalid signature' };

    // Checked after the MAC, so this reason is only ever given for a genuine provider request:
    // it then means a replay or a skewed clock, not a wrong secret.
    if (timestamp !== undefined) {
      const skewSeconds = Math.abs(now() / 1000 - timestamp);
      if (skewSeconds > options.toleranceSeconds) {
        return {
          ok: false,
          reason: `X-Payment-Timestamp is outside the ${options.toleranceSeconds} s tolerance window`,
        };
      }
    }
    return { ok: true, matchedSecret: index === 0 ? 'current' : 'previous' };
  };
}

/**
 * The header's one value, trimmed; a missing, empty or repeated header is refused. `display`
 * is the header's name as the reason shows it. Shared by every provider's scheme.
 */
export function singleHeader(
  rawHeaders: readonly string[],
  name: string,
  display: string,
): { ok: true; value: string } | { ok: false; reason: string } {
  const lines = headerLines(rawHeaders, name);
  // Two values are ambiguous, even two right ones: which did the provider mean? Counted by line,
  // since Node joins repeats with ", " and the joined value would only fail the format check,
  // with a reason ("invalid signature") that sends the sender looking for a wrong secret.
  if (lines.length > 1) return { ok: false, reason: `exactly one ${display} header is allowed` };
  const trimmed = (lines[0] ?? '').trim();
  if (trimmed.length === 0) return { ok: false, reason: `missing ${display} header` };
  return { ok: true, value: trimmed };
}
