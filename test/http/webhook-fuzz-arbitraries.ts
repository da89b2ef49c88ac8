import { createHmac } from 'node:crypto';
import fc from 'fast-check';
import { MAX_INTEGER_COLUMN } from '../../src/db/schema';
import { EVENT_ID_PATTERN, PAYMENT_SUCCEEDED_EVENT } from '../../src/shared/constants';
import type { PaymentWorkflowInput } from '../../src/shared/payment';

/**
 * Generators of hostile webhook requests, and an oracle that says what the webhook must answer
 * to each, written from the contract (DESIGN.md) rather than from the route's code.
 */

/** Runs per property: a few hundred in `npm test`; `FUZZ_RUNS=20000` for a full-size run. */
export const FUZZ_RUNS = Math.max(1, Number(process.env.FUZZ_RUNS ?? 300));
/** Set to replay a failure: fast-check prints the seed and path of every counterexample. */
/**
 * `npm test` replays one fixed seed, so CI fails only on a change, never on a seed that happened
 * to find something today; `npm run fuzz` (FUZZ_RUNS set) draws a new seed each run to explore.
 * fast-check prints the seed of a failure: FUZZ_SEED=<seed> replays it.
 */
const FUZZ_SEED =
  process.env.FUZZ_SEED !== undefined
    ? Number(process.env.FUZZ_SEED)
    : process.env.FUZZ_RUNS !== undefined
      ? undefined
      : 20_261_129;

export function fuzzParameters(numRuns: number): fc.Parameters<unknown> {
  return { numRuns, seed: FUZZ_SEED, endOnFailure: true };
}

/** Enough time for the full-size run, never less than the suite's default. */
export function fuzzTimeoutMs(runs: number, msPerRun = 5): number {
  return Math.max(60_000, 30_000 + runs * msPerRun);
}

// ---------------------------------------------------------------------------------------------
// The oracle
// ---------------------------------------------------------------------------------------------

export type Outcome =
  | { status: 200; kind: 'accepted'; input: PaymentWorkflowInput }
  /** A valid payment event under an event ID already received with another order or amount. */
  | { status: 409; kind: 'conflict'; input: PaymentWorkflowInput }
  | { status: 200; kind: 'ignored' }
  | { status: 400; kind: 'malformed' }
  | { status: 401; kind: 'unauthenticated' }
  | { status: 413; kind: 'too-large' };

const utf8 = new TextDecoder('utf-8', { fatal: true });

const isPositiveSafeInteger = (v: unknown): v is number =>
  typeof v === 'number' && Number.isSafeInteger(v) && v > 0;

/** What a validly signed body of acceptable size must produce, from the contract. */
export function classifyBody(raw: Buffer): Outcome {
  let value: unknown;
  try {
    // A UTF-8 byte order mark is tolerated (RFC 8259 allows ignoring it); anything that is not
    // UTF-8, or not JSON, is malformed.
    value = JSON.parse(utf8.decode(raw));
  } catch {
    return { status: 400, kind: 'malformed' };
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return { status: 400, kind: 'malformed' };
  }
  const record = value as Record<string, unknown>;
  const event = record.event;
  if (typeof event !== 'string' || event.length === 0 || event.length > 100) {
    return { status: 400, kind: 'malformed' };
  }
  if (event !== PAYMENT_SUCCEEDED_EVENT) return { status: 200, kind: 'ignored' };
  const { id, order_id: orderId, amount } = record;
  if (
    typeof id === 'string' &&
    EVENT_ID_PATTERN.test(id) &&
    isPositiveSafeInteger(orderId) &&
    isPositiveSafeInteger(amount)
  ) {
    return { status: 200, kind: 'accepted', input: { eventId: id, orderId, amount } };
  }
  return { status: 400, kind: 'malformed' };
}

/**
 * The outcome once earlier deliveries are taken into account: an accepted event whose ID was
 * first received with another order ID or amount is a conflict. `first` says what an event ID
 * was first received with, if it was.
 */
export function againstFirst(
  outcome: Outcome,
  first: (eventId: string) => PaymentWorkflowInput | undefined,
): Outcome {
  if (outcome.kind !== 'accepted') return outcome;
  const earlier = first(outcome.input.eventId);
  if (
    earlier === undefined ||
    (earlier.orderId === outcome.input.orderId && earlier.amount === outcome.input.amount)
  ) {
    return outcome;
  }
  return { status: 409, kind: 'conflict', input: outcome.input };
}

/** What a recording starter's event ID was first started with. */
export const firstStartOf =
  (starts: readonly PaymentWorkflowInput[]) =>
  (eventId: string): PaymentWorkflowInput | undefined =>
    starts.find((s) => s.eventId === eventId);

export const hmacHex = (secret: string, ...parts: (string | Buffer)[]) => {
  const mac = createHmac('sha256', secret);
  for (const part of parts) mac.update(part);
  return mac.digest('hex');
};

/**
 * Whether the signature header values, as the route receives them, authenticate the signed
 * bytes under one of the secrets: exactly one value, hex of either case, surrounding
 * whitespace ignored.
 */
export function isAuthentic(
  values: readonly string[],
  secrets: readonly string[],
  ...signed: (string | Buffer)[]
): boolean {
  if (values.length !== 1) return false;
  const value = values[0]!.trim();
  if (!/^[0-9a-fA-F]{64}$/.test(value)) return false;
  return secrets.some((secret) => hmacHex(secret, ...signed) === value.toLowerCase());
}

// ---------------------------------------------------------------------------------------------
// Bodies
// ---------------------------------------------------------------------------------------------

const ws = fc.constantFrom('', '', ' ', '\n', '\t', '\r\n  ');

/** A JSON string literal for `s`, sometimes with every character \u-escaped (same value). */
const jsonString = (s: string) =>
  fc
    .boolean()
    .map((escapeAll) =>
      escapeAll
        ? `"${[...s].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`
        : JSON.stringify(s),
    );

/** The same integer written the ways JSON allows (1.0, 1e0, 10E-1 all parse to 1). */
const jsonInteger = (n: number) =>
  fc.constantFrom(
    String(n),
    `${n}.0`,
    `${n}e0`,
    `${n}E+0`,
    n % 10 === 0 ? `${n / 10}e1` : `${n}.000`,
  );

export const eventIdArb = fc.oneof(
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.:-]{0,40}$/),
  fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9_.:-]{150,199}$/),
);
/** What the webhook takes: positive, and within the database's integer columns. */
const positiveColumnInteger = fc.oneof(
  fc.integer({ min: 1, max: 100_000 }),
  fc.constantFrom(1, MAX_INTEGER_COLUMN),
  fc.integer({ min: 1, max: MAX_INTEGER_COLUMN }),
);

/** Keys that have bitten JavaScript parsers and validators before, and other odd keys. */
const hostileKey = fc.oneof(
  fc.constantFrom(
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    'valueOf',
    '',
    'événement',
    '💳',
    'event ',
    'Event',
    'ID',
  ),
  fc.string({ maxLength: 12 }),
);
const extraField = fc
  .tuple(hostileKey, fc.jsonValue({ maxDepth: 2 }))
  .map(([key, value]) => `${JSON.stringify(key)}:${JSON.stringify(value)}`);

/** Values a field must not be accepted with (out of range, wrong type, unicode, too long). */
const hostileValue = fc.oneof(
  fc.constantFrom(
    '0',
    '-1',
    '-0',
    '1.5',
    '0.1e1',
    '9007199254740992',
    '9007199254740993',
    '1e400',
    '-1e400',
    '1e-400',
    '"12"',
    'null',
    'true',
    '[]',
    '{}',
    '[1]',
    '{"__proto__":1}',
    '""',
    '"-x"',
    '"a/b"',
    '"../../x"',
    '"é"',
    '"a b"',
    '"a\\u0000"',
    '"a\\n"',
    `"${'a'.repeat(201)}"`,
    '"__proto__"',
    '"payment.succeeded "',
    '"PAYMENT.SUCCEEDED"',
    '"payment\\u2024succeeded"',
  ),
  fc.jsonValue({ maxDepth: 1 }).map((v) => JSON.stringify(v)),
  fc.string({ unit: 'binary', maxLength: 20 }).map((s) => JSON.stringify(s)),
  fc.double().map((d) => (Number.isFinite(d) ? String(d) : '1e999')),
);

interface PaymentFields {
  id: string;
  orderId: number;
  amount: number;
}

/**
 * A payment event as text: fields in any order, any whitespace, escapes and number spellings,
 * extra fields with hostile keys, and decoy duplicates of a real key before it (the last one
 * wins in JSON.parse). Optionally one field replaced by a hostile value.
 */
function paymentText(fields: PaymentFields, breakOne: boolean) {
  return fc
    .record({
      id: jsonString(fields.id),
      event: jsonString(PAYMENT_SUCCEEDED_EVENT),
      orderId: jsonInteger(fields.orderId),
      amount: jsonInteger(fields.amount),
      extras: fc.array(extraField, { maxLength: 4 }),
      decoys: fc.array(
        fc.tuple(fc.constantFrom('id', 'event', 'order_id', 'amount'), hostileValue),
        { maxLength: 2 },
      ),
      broken: breakOne
        ? fc.tuple(fc.constantFrom('id', 'event', 'order_id', 'amount'), hostileValue)
        : fc.constant(undefined),
      spaces: fc.array(ws, { minLength: 4, maxLength: 4 }),
    })
    .chain((p) => {
      const value = (key: string, real: string) => (p.broken?.[0] === key ? p.broken[1] : real);
      const group = (key: string, real: string) => [
        ...p.decoys.filter(([k]) => k === key).map(([k, v]) => `"${k}":${v}`),
        `"${key}":${p.spaces[0]}${value(key, real)}`,
      ];
      const groups = [
        group('id', p.id),
        group('event', p.event),
        group('order_id', p.orderId),
        group('amount', p.amount),
        ...p.extras.map((e) => [e]),
      ];
      return fc
        .shuffledSubarray(groups, { minLength: groups.length, maxLength: groups.length })
        .map(
          (ordered) =>
            `${p.spaces[1]}{${p.spaces[2]}${ordered.flat().join(`,${p.spaces[3]}`)}}${p.spaces[1]}`,
        );
    });
}

const paymentFields = fc.record({
  id: eventIdArb,
  orderId: positiveColumnInteger,
  amount: positiveColumnInteger,
});

export const validPaymentBody = paymentFields.chain((f) => paymentText(f, false));
const brokenPaymentBody = paymentFields.chain((f) => paymentText(f, true));

const otherEventBody = fc
  .tuple(
    fc.oneof(
      fc.constantFrom('payment.pending', 'payment.failed', 'payment.succeeded.v2', 'x'),
      fc.string({ unit: 'binary', minLength: 1, maxLength: 100 }),
      fc.string({ minLength: 101, maxLength: 120 }),
    ),
    fc.dictionary(hostileKey, fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 }),
  )
  .map(([event, rest]) => JSON.stringify({ ...rest, event }));

/** Nesting up to thousands of levels: arrays, objects, or a real event buried in a wrapper. */
const deeplyNestedBody = fc
  .tuple(fc.integer({ min: 1, max: 3000 }), fc.constantFrom('array', 'event', 'data'))
  .map(([depth, kind]) => {
    switch (kind) {
      case 'array':
        return `${'['.repeat(depth)}${']'.repeat(depth)}`;
      case 'event':
        return `${'{"event":'.repeat(depth)}"payment.succeeded"${'}'.repeat(depth)}`;
      default:
        return `${'{"data":'.repeat(depth)}{"id":"e1","event":"payment.succeeded","order_id":1,"amount":1}${'}'.repeat(depth)}`;
    }
  });

/** Objects whose own `__proto__` / `constructor` keys try to smuggle in the fields. */
const prototypeKeysBody = fc
  .tuple(eventIdArb, fc.constantFrom('__proto__', 'constructor', 'prototype'))
  .map(([id, key]) =>
    fc.constantFrom(
      `{"${key}":{"id":"${id}","event":"payment.succeeded","order_id":1,"amount":1}}`,
      `{"${key}":{"prototype":{"event":"payment.succeeded"}},"id":"${id}","order_id":1,"amount":1}`,
      `{"event":"payment.succeeded","id":"${id}","order_id":1,"amount":1,"${key}":{"amount":-1}}`,
      `{"${key}":null,"event":"payment.failed"}`,
    ),
  )
  .chain((a) => a);

/** Byte sequences UTF-8 forbids: stray continuation, overlong, surrogate, out of range, cut. */
const invalidUtf8 = fc.constantFrom(
  [0xff],
  [0xfe, 0xff],
  [0x80],
  [0xc0, 0xaf],
  [0xe0, 0x80, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
  [0xe2, 0x82],
  [0xc3],
);

const invalidUtf8Body = fc.tuple(validPaymentBody, invalidUtf8, fc.nat()).map(([text, bad, at]) => {
  const bytes = Buffer.from(text);
  const cut = at % (bytes.length + 1);
  return Buffer.concat([bytes.subarray(0, cut), Buffer.from(bad), bytes.subarray(cut)]);
});

const bomBody = validPaymentBody.map((text) =>
  Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(text)]),
);

/** Any bytes, any text, any JSON value. */
const randomBody = fc.oneof(
  fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
  fc.string({ unit: 'binary', maxLength: 200 }),
  fc.jsonValue().map((v) => JSON.stringify(v)),
  fc.constantFrom('', ' ', 'null', '{}', '[]', '""', '0', '{"event":""}', '\u0000'),
);

/** Hostile bodies that stay within `limit` bytes, and some that go just past it or far past. */
export function bodyArb(limit: number): fc.Arbitrary<Buffer> {
  const sized = fc.tuple(validPaymentBody, fc.integer({ min: -2, max: 2 })).map(([text, delta]) => {
    // A valid event padded with whitespace to the limit, a byte over or under it.
    const padding = Math.max(0, limit + delta - Buffer.byteLength(text));
    return `${text}${' '.repeat(padding)}`;
  });
  const huge = fc.oneof(
    fc.integer({ min: limit + 1, max: limit * 4 }).map((n) => Buffer.alloc(n, 0x7b)),
    fc.constant(Buffer.alloc(2 * 1024 * 1024, 0x20)),
  );
  return fc
    .oneof(
      { arbitrary: validPaymentBody, weight: 6 },
      { arbitrary: brokenPaymentBody, weight: 4 },
      { arbitrary: otherEventBody, weight: 2 },
      { arbitrary: deeplyNestedBody, weight: 1 },
      { arbitrary: prototypeKeysBody, weight: 1 },
      { arbitrary: invalidUtf8Body, weight: 1 },
      { arbitrary: bomBody, weight: 1 },
      { arbitrary: randomBody, weight: 3 },
      { arbitrary: sized, weight: 1 },
      { arbitrary: huge, weight: 1 },
    )
    .map((b) => (Buffer.isBuffer(b) ? b : Buffer.from(b)));
}

// ---------------------------------------------------------------------------------------------
// Signatures and headers
// ---------------------------------------------------------------------------------------------

export const SIGNATURE_KINDS = [
  'current',
  'previous',
  'uppercase',
  'padded',
  'other-secret',
  'flipped-digit',
  'truncated',
  'extended',
  'random-hex',
  'zeros',
  'empty',
  'missing',
  'not-hex',
  'other-body',
  'twice-same',
  'twice-mixed',
  'prefixed',
  'base64',
  'inner-space',
  'the-secret',
] as const;
export type SignatureKind = (typeof SIGNATURE_KINDS)[number];

export interface SignatureNoise {
  kind: SignatureKind;
  position: number;
  randomHex: string;
  junk: string;
}

export const signatureNoiseArb: fc.Arbitrary<SignatureNoise> = fc.record({
  // Valid kinds are weighted up so about half the requests are authentic.
  kind: fc.oneof(
    { arbitrary: fc.constantFrom<SignatureKind>('current', 'previous'), weight: 8 },
    { arbitrary: fc.constantFrom<SignatureKind>('uppercase', 'padded'), weight: 3 },
    { arbitrary: fc.constantFrom(...SIGNATURE_KINDS), weight: 10 },
  ),
  position: fc.nat(63),
  randomHex: fc.stringMatching(/^[0-9a-f]{64}$/),
  junk: fc.string({ minLength: 1, maxLength: 80 }),
});

export interface Secrets {
  current: string;
  previous: string;
}

/**
 * The X-Payment-Signature header values a request carries (none, one, or several lines) for
 * `signed` (the bytes the scheme signs), built from the noise.
 */
export function signatureValues(
  noise: SignatureNoise,
  secrets: Secrets,
  ...signed: (string | Buffer)[]
): string[] {
  const good = hmacHex(secrets.current, ...signed);
  const flip = (hex: string, at: number) =>
    hex.slice(0, at) + ((parseInt(hex[at]!, 16) + 1) % 16).toString(16) + hex.slice(at + 1);
  switch (noise.kind) {
    case 'current':
      return [good];
    case 'previous':
      return [hmacHex(secrets.previous, ...signed)];
    case 'uppercase':
      return [good.toUpperCase()];
    case 'padded':
      return [noise.position % 2 === 0 ? ` ${good}\t` : `\t ${good}  `];
    case 'other-secret':
      return [hmacHex(`${secrets.current}x`, ...signed)];
    case 'flipped-digit':
      return [flip(good, noise.position)];
    case 'truncated':
      return [good.slice(0, noise.position)];
    case 'extended':
      return [`${good}${noise.randomHex.slice(0, 1 + (noise.position % 8))}`];
    case 'random-hex':
      return [noise.randomHex];
    case 'zeros':
      return ['0'.repeat(64)];
    case 'empty':
      return [''];
    case 'missing':
      return [];
    case 'not-hex':
      return [noise.junk];
    case 'other-body':
      return [hmacHex(secrets.current, noise.junk)];
    case 'twice-same':
      return [good, good];
    case 'twice-mixed':
      return noise.position % 2 === 0 ? [good, noise.randomHex] : [noise.randomHex, good];
    case 'prefixed':
      return [`sha256=${good}`];
    case 'base64':
      return [Buffer.from(good, 'hex').toString('base64')];
    case 'inner-space':
      return [`${good.slice(0, 32)} ${good.slice(32)}`];
    case 'the-secret':
      return [secrets.current];
  }
}

/** Content types a provider, a proxy or an attacker might claim, valid or not. */
export const contentTypeArb = fc.oneof(
  fc.constantFrom(
    undefined,
    '',
    'application/json',
    'application/json; charset=utf-8',
    'APPLICATION/JSON',
    'text/plain',
    'application/octet-stream',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    '*/*',
    ';;;',
    'a/b/c',
    'application/json; charset=utf-16',
    'ü/ü',
  ),
  fc.string({ maxLength: 40 }).filter((s) => /^[\t\x20-\x7e]*$/.test(s)),
);

/** Content-Encoding claims: the body is never actually compressed. */
export const contentEncodingArb = fc.constantFrom(
  undefined,
  'gzip',
  'br',
  'deflate',
  'identity',
  'gzip, br',
  'x-unknown',
);

/** Unrelated headers with printable values; never the ones that frame the message. */
export const extraHeadersArb = fc.dictionary(
  fc.stringMatching(/^x-[a-z0-9-]{1,20}$/).filter((n) => !n.startsWith('x-payment-')),
  fc.string({ maxLength: 60 }).filter((s) => /^[\x20-\x7e]*$/.test(s)),
  { maxKeys: 4 },
);

/** The signature header's name as a client might spell it: HTTP header names are case-blind. */
export const signatureHeaderNameArb = fc.constantFrom(
  'x-payment-signature',
  'X-Payment-Signature',
  'X-PAYMENT-SIGNATURE',
  'x-PaYmEnT-sIgNaTuRe',
);
