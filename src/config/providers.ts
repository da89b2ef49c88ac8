import { z } from 'zod';
import {
  parseStandardPublicKey,
  parseStandardSecret,
  STANDARD_DEFAULT_TOLERANCE_SECONDS,
} from '../http/providers/standard-signature';
import { STRIPE_DEFAULT_TOLERANCE_SECONDS } from '../http/providers/stripe-signature';
import {
  blankToUndefined,
  type Checked,
  doc,
  optionalUrl,
  secretList,
  texts,
  toleranceSeconds,
} from './fields';

/**
 * Public development secrets of the Stripe and Standard Webhooks endpoints, so `npm start` serves
 * them and `npm run demo -- --provider …` can sign for them; production refuses both.
 */
export const DEV_STRIPE_WEBHOOK_SECRET = 'whsec_dev_stripe_webhook_secret';
export const DEV_STANDARD_WEBHOOK_SECRET = `whsec_${Buffer.from('dev-standard-webhooks-secret').toString('base64')}`;
/** The currency of order totals unless SHOP_CURRENCY says otherwise (the demo's orders are yen). */
export const DEFAULT_SHOP_CURRENCY = 'jpy';

function stripeSecret(value: string): string {
  if (value.startsWith('whsec_') && value.length > 'whsec_'.length) return value;
  throw new Error("must be the endpoint's signing secret, whsec_… (not an API key, sk_…)");
}

export const providerFields = {
  STRIPE_WEBHOOK_SECRETS: doc(
    secretList(stripeSecret),
    'Stripe endpoint signing secrets (`whsec_…`; `stripe listen` prints one locally), comma-separated, current first: during a roll Stripe signs with both. Unset in production: the Stripe endpoint is not served',
    'development: a public dev secret; production: unset',
  ),
  STRIPE_WEBHOOK_TOLERANCE_SECONDS: doc(
    toleranceSeconds(STRIPE_DEFAULT_TOLERANCE_SECONDS),
    'how old a `Stripe-Signature` timestamp may be (Stripe signs every delivery attempt afresh)',
  ),
  STRIPE_LIVEMODE: doc(
    blankToUndefined.pipe(
      z
        .enum(['true', 'false'], { message: 'must be true or false' })
        .transform((v) => v === 'true')
        .optional(),
    ),
    'which Stripe mode’s events may pay orders: `true` live, `false` test; an event of the other mode is kept as unmatched, never paid',
    'production: `true`; else `false`',
  ),
  STRIPE_ACCOUNT_ID: doc(
    blankToUndefined.pipe(
      z
        .string()
        .regex(/^acct_[A-Za-z0-9]{1,100}$/, 'must be a Stripe account ID, acct_…')
        .optional(),
    ),
    'the shop’s Stripe account (`acct_…`): an event from any other account (a Connect account’s, another integration’s) is kept as unmatched; unset: not checked',
    'unset',
  ),
  STRIPE_API_KEY: doc(
    blankToUndefined.pipe(
      z
        .string()
        .regex(
          /^(sk|rk)_(test|live)_[A-Za-z0-9_]{8,}$/,
          'must be a Stripe secret (sk_…) or restricted (rk_…) key, not a publishable or webhook one',
        )
        .optional(),
    ),
    'a secret or restricted key (`sk_…`/`rk_…`, read access to PaymentIntents, Charges, Refunds and Disputes), used only to fetch the objects of thin events; unset: thin events are kept as unmatched (`thin_unresolved`)',
    'unset',
  ),
  STRIPE_API_BASE_URL: doc(
    optionalUrl(),
    'where the worker fetches thin events’ objects from (a local double in tests)',
    'unset: Stripe’s own, api.stripe.com',
  ),
  STANDARD_WEBHOOK_SECRETS: doc(
    secretList(parseStandardSecret),
    'Standard Webhooks symmetric secrets (`whsec_<base64>`), comma-separated, current first. Unset in production with no public key either: the endpoint is not served',
    'development: a public dev secret; production: unset',
  ),
  STANDARD_WEBHOOK_PUBLIC_KEYS: doc(
    secretList(parseStandardPublicKey),
    'Standard Webhooks ed25519 public keys (`whpk_<base64 of 32 bytes>`) for `v1a` signatures',
    'unset',
  ),
  STANDARD_WEBHOOK_TOLERANCE_SECONDS: doc(
    toleranceSeconds(STANDARD_DEFAULT_TOLERANCE_SECONDS),
    'how far `webhook-timestamp` may be from our clock, either way',
  ),
  SHOP_CURRENCY: doc(
    blankToUndefined.pipe(
      z
        .string()
        .regex(/^[A-Za-z]{3}$/, 'must be a three-letter ISO 4217 code (e.g. jpy, eur, usd)')
        .transform((v) => v.toLowerCase())
        .optional(),
    ),
    'ISO 4217 currency of order totals: a provider’s payment in another one is kept as unmatched; required in production when a Stripe or Standard Webhooks endpoint is configured',
    `\`${DEFAULT_SHOP_CURRENCY}\``,
  ),
};

type Providers = Checked<typeof providerFields>;

export function checkProvidersInProduction(c: Providers, ctx: z.RefinementCtx): void {
  if (
    c.STRIPE_WEBHOOK_SECRETS?.some(
      (s) => s.text === DEV_STRIPE_WEBHOOK_SECRET || s.text.length < 22,
    )
  ) {
    ctx.addIssue({
      code: 'custom',
      path: ['STRIPE_WEBHOOK_SECRETS'],
      message:
        "in production use the endpoint's own signing secret (Dashboard > Webhooks), not the dev default",
    });
  }
  // The key parsed above (fields.ts: secretList), not parsed again: its length is the key's.
  const weak = (s: { text: string; parsed?: Buffer }) =>
    s.text === DEV_STANDARD_WEBHOOK_SECRET || (s.parsed?.length ?? 0) < 16;
  if (c.STANDARD_WEBHOOK_SECRETS?.some(weak)) {
    ctx.addIssue({
      code: 'custom',
      path: ['STANDARD_WEBHOOK_SECRETS'],
      message: 'in production use the sender’s secret (16+ bytes of key), not the dev default',
    });
  }
  if (c.STRIPE_API_KEY?.includes('_test_') && c.STRIPE_LIVEMODE !== false) {
    ctx.addIssue({
      code: 'custom',
      path: ['STRIPE_API_KEY'],
      message:
        'a test-mode key cannot fetch live-mode events: use the live key, or set STRIPE_LIVEMODE=false',
    });
  }
  const providers = [
    c.STRIPE_WEBHOOK_SECRETS,
    c.STANDARD_WEBHOOK_SECRETS,
    c.STANDARD_WEBHOOK_PUBLIC_KEYS,
  ];
  if (c.SHOP_CURRENCY === undefined && providers.some((list) => list !== undefined)) {
    ctx.addIssue({
      code: 'custom',
      path: ['SHOP_CURRENCY'],
      message:
        'set it in production when a Stripe or Standard Webhooks endpoint is configured: their payments carry a currency, and only this one may pay an order',
    });
  }
}

/**
 * Development serves every provider's endpoint on public dev secrets; production only those
 * configured (an unconfigured one is not served: 404). The rest of the app gets the texts.
 */
export function finishProviders(c: Providers) {
  const dev = c.NODE_ENV !== 'production';
  const standardConfigured =
    c.STANDARD_WEBHOOK_SECRETS !== undefined || c.STANDARD_WEBHOOK_PUBLIC_KEYS !== undefined;
  return {
    STRIPE_WEBHOOK_SECRETS:
      texts(c.STRIPE_WEBHOOK_SECRETS) ?? (dev ? [DEV_STRIPE_WEBHOOK_SECRET] : []),
    STANDARD_WEBHOOK_SECRETS:
      texts(c.STANDARD_WEBHOOK_SECRETS) ??
      (dev && !standardConfigured ? [DEV_STANDARD_WEBHOOK_SECRET] : []),
    STANDARD_WEBHOOK_PUBLIC_KEYS: texts(c.STANDARD_WEBHOOK_PUBLIC_KEYS) ?? [],
    SHOP_CURRENCY: c.SHOP_CURRENCY ?? DEFAULT_SHOP_CURRENCY,
    STRIPE_LIVEMODE: c.STRIPE_LIVEMODE ?? !dev,
  };
}
