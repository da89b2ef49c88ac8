import { z } from 'zod';
import { blankToUndefined, type Checked, doc, integer } from './fields';

const DEV_WEBHOOK_SECRET = 'dev-webhook-secret';

/** Exported so `buildApp` falls back to them for a caller passing only some settings. */
export const WEBHOOK_SECURITY_DEFAULTS = Object.freeze({
  WEBHOOK_SIGNATURE_SCHEME: 'plain',
  WEBHOOK_TOLERANCE_SECONDS: 300,
  WEBHOOK_AUTH_FAILURE_LIMIT: 20,
  WEBHOOK_AUTH_FAILURE_WINDOW_SECONDS: 60,
  WEBHOOK_AUTH_FAILURE_MAX_CLIENTS: 10_000,
} as const);

const d = WEBHOOK_SECURITY_DEFAULTS;

/** The contract's own endpoint (/api/v1/webhooks/payment) and the hardening every endpoint shares. */
export const webhookFields = {
  PAYMENT_WEBHOOK_SECRET: doc(
    z.string().min(1).default(DEV_WEBHOOK_SECRET),
    'HMAC-SHA256 secret shared with the provider of the contract’s endpoint (16+ characters in production; the default is public)',
  ),
  PAYMENT_WEBHOOK_SECRET_PREVIOUS: doc(
    blankToUndefined,
    'the secret being rotated out: accepted alongside the current one until the provider has switched ([rotation](webhook-security.md#secret-rotation))',
    'unset',
  ),
  WEBHOOK_BODY_LIMIT_BYTES: doc(
    integer(256, 10 * 1024 * 1024).default(64 * 1024),
    'larger webhook bodies get 413',
  ),
  WEBHOOK_SIGNATURE_SCHEME: doc(
    z
      .enum(['plain', 'timestamped'], {
        message: 'must be plain (HMAC of the raw body) or timestamped (HMAC of <timestamp>.<body>)',
      })
      .default(d.WEBHOOK_SIGNATURE_SCHEME),
    '`plain`: HMAC of the raw body (the contract); `timestamped`: HMAC of `<X-Payment-Timestamp>.<raw body>`',
  ),
  WEBHOOK_TOLERANCE_SECONDS: doc(
    z.coerce
      .number()
      .int()
      .min(1)
      .max(
        3600,
        'must be at most 3600: a wider window lets a leaked request be replayed for longer',
      )
      .default(d.WEBHOOK_TOLERANCE_SECONDS),
    'timestamped scheme: how far `X-Payment-Timestamp` may be from our clock, either way, before 401',
  ),
  WEBHOOK_AUTH_FAILURE_LIMIT: doc(
    integer(0, 100_000).default(d.WEBHOOK_AUTH_FAILURE_LIMIT),
    'failed signature checks per client address and window before 429 + Retry-After; `0` turns the limit off',
  ),
  WEBHOOK_AUTH_FAILURE_WINDOW_SECONDS: doc(
    integer(1, 86_400).default(d.WEBHOOK_AUTH_FAILURE_WINDOW_SECONDS),
    'sliding window of that limit',
  ),
  WEBHOOK_AUTH_FAILURE_MAX_CLIENTS: doc(
    integer(100, 1_000_000).default(d.WEBHOOK_AUTH_FAILURE_MAX_CLIENTS),
    'client addresses the limit tracks at most (bounds its memory: past it, the longest-quiet one is forgotten)',
  ),
};

export function checkWebhook(c: Checked<typeof webhookFields>, ctx: z.RefinementCtx): void {
  const previous = c.PAYMENT_WEBHOOK_SECRET_PREVIOUS;
  if (previous !== undefined && previous === c.PAYMENT_WEBHOOK_SECRET) {
    ctx.addIssue({
      code: 'custom',
      path: ['PAYMENT_WEBHOOK_SECRET_PREVIOUS'],
      message: 'equals PAYMENT_WEBHOOK_SECRET: set it to the secret being rotated out, or unset it',
    });
  }
}

/** Production refuses the public dev secret, for the current and the previous one alike. */
export function checkWebhookInProduction(
  c: Checked<typeof webhookFields>,
  ctx: z.RefinementCtx,
): void {
  const previous = c.PAYMENT_WEBHOOK_SECRET_PREVIOUS;
  if (previous !== undefined && (previous === DEV_WEBHOOK_SECRET || previous.length < 16)) {
    ctx.addIssue({
      code: 'custom',
      path: ['PAYMENT_WEBHOOK_SECRET_PREVIOUS'],
      message:
        'in production the previous secret must be a real one (16+ characters), not the dev default',
    });
  }
  if (c.PAYMENT_WEBHOOK_SECRET === DEV_WEBHOOK_SECRET || c.PAYMENT_WEBHOOK_SECRET.length < 16) {
    ctx.addIssue({
      code: 'custom',
      path: ['PAYMENT_WEBHOOK_SECRET'],
      message: 'set the provider secret (16+ characters) in production; the dev default is public',
    });
  }
}
