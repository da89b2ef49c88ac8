import { createHmac, createPublicKey, type KeyObject, verify } from 'node:crypto';
import { headerLines } from '../header-lines';
import { singleHeader } from '../webhook-auth';
import {
  firstMatchingKey,
  type ProviderAuthResult,
  type ProviderVerifier,
  secretLabel,
  UNIX_SECONDS,
} from './provider';

export const WEBHOOK_ID_HEADER = 'webhook-id';
export const WEBHOOK_TIMESTAMP_HEADER = 'webhook-timestamp';
export const WEBHOOK_SIGNATURE_HEADER = 'webhook-signature';

/**
 * The same three headers as Svix names them: its standard plan signs with `svix-id`,
 * `svix-timestamp` and `svix-signature`, the same scheme under its own brand (its library reads
 * either set). A delivery that carries no `webhook-id` line is read from the `svix-` set.
 */
export const SVIX_HEADER_PREFIX = 'svix-';
const SPEC_HEADER_PREFIX = 'webhook-';

/** The spec's tolerance, and its reference library's (five minutes, either way). */
export const STANDARD_DEFAULT_TOLERANCE_SECONDS = 300;

const SECRET_PREFIX = 'whsec_';
const PUBLIC_KEY_PREFIX = 'whpk_';
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const ED25519_PUBLIC_KEY_BYTES = 32;
// A base64 ed25519 signature: 64 bytes, 88 characters.
const V1A_SIGNATURE = /^[A-Za-z0-9+/]{86}==$/;

/**
 * The key of a `whsec_<base64>` secret: the decoded bytes, as the spec and its libraries use it
 * (the prefix is optional there too). Throws an Error that names the problem, never the secret.
 */
export function parseStandardSecret(text: string): Buffer {
  const key = decodeBase64(
    text.startsWith(SECRET_PREFIX) ? text.slice(SECRET_PREFIX.length) : text,
  );
  if (key === undefined || key.length === 0) {
    throw new Error('must be whsec_ followed by the base64 of the key (e.g. whsec_MfKQ9r8G…)');
  }
  return key;
}

/** A `whpk_<base64 of 32 bytes>` ed25519 public key (the spec's asymmetric `v1a` scheme). */
export function parseStandardPublicKey(text: string): KeyObject {
  const raw = decodeBase64(
    text.startsWith(PUBLIC_KEY_PREFIX) ? text.slice(PUBLIC_KEY_PREFIX.length) : text,
  );
  if (raw?.length !== ED25519_PUBLIC_KEY_BYTES) {
    throw new Error('must be whpk_ followed by the base64 of a 32-byte ed25519 public key');
  }
  return createPublicKey({
    key: { kty: 'OKP', crv: 'Ed25519', x: raw.toString('base64url') },
    format: 'jwk',
  });
}

function decodeBase64(text: string): Buffer | undefined {
  return BASE64.test(text) ? Buffer.from(text, 'base64') : undefined;
}

export interface StandardSignatureOptions {
  /** Symmetric keys (decoded `whsec_` secrets), current first; several during a rotation. */
  secrets: readonly Buffer[];
  /** ed25519 public keys for `v1a` signatures; none: `v1a` signatures match nothing. */
  publicKeys?: readonly KeyObject[];
  toleranceSeconds: number;
  /** Milliseconds since the epoch; injectable for tests. */
  now?: () => number;
}

interface SignatureList {
  v1: string[];
  v1a: Buffer[];
}

/**
 * `webhook-signature` as the spec's library reads it: space-separated `<version>,<signature>`
 * entries; entries of a version we do not check (or of no version) are skipped, so a sender can
 * add a scheme without breaking us. A `v1a` that is not 64 bytes of base64 can match nothing.
 */
export function parseStandardSignatures(value: string): SignatureList {
  const list: SignatureList = { v1: [], v1a: [] };
  for (const entry of value.split(' ')) {
    const [version, signature] = entry.split(',');
    // A version without a signature (or an empty entry between two spaces) signs nothing.
    if (signature === undefined) continue;
    if (version === 'v1') list.v1.push(signature);
    if (version === 'v1a' && V1A_SIGNATURE.test(signature)) {
      list.v1a.push(Buffer.from(signature, 'base64'));
    }
  }
  return list;
}

/**
 * The Standard Webhooks check: the signed content is `<webhook-id>.<webhook-timestamp>.<raw
 * body>`; `v1` is base64 HMAC-SHA256 under a `whsec_` key, `v1a` an ed25519 signature under a
 * `whpk_` public key; any one valid signature under any configured key suffices. The timestamp
 * must be within the tolerance either way. The verified `webhook-id` is the event ID: the spec
 * makes it the idempotency key, the same on every retry of a message.
 */
export function createStandardVerifier(options: StandardSignatureOptions): ProviderVerifier {
  const now = options.now ?? Date.now;
  const publicKeys = options.publicKeys ?? [];
  return (rawBody, rawHeaders): ProviderAuthResult => {
    // One set, never a mix: the three values are signed together, so they come from one sender.
    const prefix =
      headerLines(rawHeaders, WEBHOOK_ID_HEADER).length === 0 &&
      headerLines(rawHeaders, `${SVIX_HEADER_PREFIX}id`).length > 0
        ? SVIX_HEADER_PREFIX
        : SPEC_HEADER_PREFIX;
    const read = (name: string) => singleHeader(rawHeaders, prefix + name, prefix + name);
    const id = read('id');
    if (!id.ok) return id;
    const timestamp = read('timestamp');
    if (!timestamp.ok) return timestamp;
    if (!UNIX_SECONDS.test(timestamp.value)) {
      return { ok: false, reason: `${prefix}timestamp must be a Unix time in seconds` };
    }
    const header = read('signature');
    if (!header.ok) return header;
    const signatures = parseStandardSignatures(header.value);
    if (signatures.v1.length + signatures.v1a.length === 0) {
      return { ok: false, reason: `${prefix}signature has no v1 or v1a signature` };
    }

    // The library signs the number it parsed, so a padded timestamp stands for its value here too.
    const seconds = Number(timestamp.value);
    const content = Buffer.concat([Buffer.from(`${id.value}.${seconds}.`), rawBody]);
    // Compared as the base64 text the library compares, so a signature with other padding bits
    // (the same bytes once decoded) is refused here as there.
    const expected = options.secrets.map((key) =>
      Buffer.from(createHmac('sha256', key).update(content).digest('base64')),
    );
    let matched = secretIndex(
      firstMatchingKey(
        expected,
        signatures.v1.map((s) => Buffer.from(s)),
      ),
    );
    if (matched === undefined) {
      const keyIndex = publicKeys.findIndex((key) =>
        signatures.v1a.some((signature) => verify(null, content, key, signature)),
      );
      if (keyIndex !== -1) matched = `public key ${secretLabel(keyIndex)}`;
    }
    if (matched === undefined) return { ok: false, reason: 'invalid signature' };

    // After the signature, so this reason only answers a genuine message (replay or clock skew).
    if (Math.abs(Math.floor(now() / 1000) - seconds) > options.toleranceSeconds) {
      return {
        ok: false,
        reason: `${prefix}timestamp is outside the ${options.toleranceSeconds} s tolerance window`,
      };
    }
    return { ok: true, matchedSecret: matched, id: id.value };
  };
}

function secretIndex(index: number): string | undefined {
  return index === -1 ? undefined : secretLabel(index);
}
