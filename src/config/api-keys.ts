import { createHash, timingSafeEqual } from 'node:crypto';

/** `orders:read:pii` implies `orders:read` and adds the customer's e-mail address. */
export const ORDER_SCOPES = ['orders:read', 'orders:read:pii', 'orders:write'] as const;
export type OrderScope = (typeof ORDER_SCOPES)[number];

/** One configured key. Only its SHA-256 is kept, so a dumped config object holds no credential. */
export interface ApiKey {
  readonly id: string;
  readonly scopes: ReadonlySet<OrderScope>;
  readonly digest: Buffer;
}

/**
 * `openssl rand -hex 16`. Shorter keys are refused everywhere, so a development key that ever
 * becomes the production key is at least a real one.
 */
export const MIN_API_KEY_LENGTH = 32;
// token68 of RFC 7235, what a Bearer credential may contain; ':' and ',' are also the
// separators of ORDERS_API_KEYS, which this alphabet keeps out.
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;
const KEY_ID = /^[A-Za-z0-9_.-]{1,64}$/;
/** Longer than any key we accept: a longer credential is refused before it is hashed. */
const MAX_TOKEN_LENGTH = 512;

export const API_KEYS_FORMAT =
  '<key id>:<key>:<scope>[+<scope>…], comma-separated (e.g. shop:$(openssl rand -hex 16):orders:read+orders:write)';

/** Parses ORDERS_API_KEYS; throws an Error saying what is wrong with which entry (never the key). */
export function parseApiKeys(setting: string): ApiKey[] {
  const keys: ApiKey[] = [];
  const entries = setting
    .split(',')
    .map((e) => e.trim())
    .filter((e) => e.length > 0);
  if (entries.length === 0) throw new Error(`no key; expected ${API_KEYS_FORMAT}`);
  entries.forEach((entry, index) => {
    // Scopes contain ':' themselves: the ID and the key are the first two fields, the rest is scopes.
    const [id = '', key = '', ...scopeParts] = entry.split(':');
    const where = KEY_ID.test(id) ? `key "${id}"` : `entry ${index + 1}`;
    if (!KEY_ID.test(id)) {
      throw new Error(`${where}: the key id must be 1-64 letters, digits, '.', '_' or '-'`);
    }
    if (!TOKEN68.test(key) || key.length < MIN_API_KEY_LENGTH || key.length > MAX_TOKEN_LENGTH) {
      throw new Error(
        `${where}: the key must be ${MIN_API_KEY_LENGTH}-${MAX_TOKEN_LENGTH} characters of A-Z a-z 0-9 - . _ ~ + / (e.g. openssl rand -hex 16)`,
      );
    }
    const scopes = scopeParts.join(':').split('+');
    const unknown = scopes.filter((s) => !(ORDER_SCOPES as readonly string[]).includes(s));
    if (scopes.length === 0 || unknown.length > 0) {
      throw new Error(
        `${where}: unknown scope ${JSON.stringify(unknown.join('+'))}; scopes are ${ORDER_SCOPES.join(', ')}, joined with +`,
      );
    }
    if (keys.some((k) => k.id === id)) throw new Error(`${where}: the key id is used twice`);
    const digest = sha256(key);
    if (keys.some((k) => timingSafeEqual(k.digest, digest))) {
      throw new Error(`${where}: the same key is configured twice; give each client its own`);
    }
    keys.push({ id, scopes: withImpliedScopes(scopes as OrderScope[]), digest });
  });
  return keys;
}

function withImpliedScopes(scopes: readonly OrderScope[]): ReadonlySet<OrderScope> {
  const set = new Set(scopes);
  if (set.has('orders:read:pii')) set.add('orders:read');
  return set;
}

function sha256(value: string): Buffer {
  return createHash('sha256').update(value, 'utf8').digest();
}

/**
 * Constant-time comparison of equal-length digests against every key, no early exit: neither
 * time nor length tells how close a guess was or which key it was near.
 */
export function findApiKey(keys: readonly ApiKey[], presented: string): ApiKey | undefined {
  if (presented.length > MAX_TOKEN_LENGTH) return undefined;
  const digest = sha256(presented);
  let found: ApiKey | undefined;
  for (const key of keys) {
    if (timingSafeEqual(key.digest, digest) && found === undefined) found = key;
  }
  return found;
}
