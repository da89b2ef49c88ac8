import type { Config } from '../../config';
import type { WebhookAuthOptions } from '../webhook-auth';
import { originalProvider } from './original';
import type { WebhookProvider } from './provider';
import {
  parseStandardPublicKey,
  parseStandardSecret,
  STANDARD_DEFAULT_TOLERANCE_SECONDS,
} from './standard-signature';
import { standardWebhooksProvider } from './standard-webhooks';
import { stripeProvider } from './stripe';
import { STRIPE_DEFAULT_TOLERANCE_SECONDS } from './stripe-signature';

export type { WebhookProvider } from './provider';

/** The provider settings; each left out means that provider is not configured. */
export type ProvidersConfig = Partial<
  Pick<
    Config,
    | 'STRIPE_WEBHOOK_SECRETS'
    | 'STRIPE_WEBHOOK_TOLERANCE_SECONDS'
    | 'STRIPE_LIVEMODE'
    | 'STRIPE_ACCOUNT_ID'
    | 'STANDARD_WEBHOOK_SECRETS'
    | 'STANDARD_WEBHOOK_PUBLIC_KEYS'
    | 'STANDARD_WEBHOOK_TOLERANCE_SECONDS'
  >
>;

/**
 * The providers whose endpoints the app serves: always the contract's original one, then Stripe
 * and a Standard Webhooks sender when their secrets (or, for the latter, public keys) are
 * configured. An unconfigured provider has no endpoint (404): it could authenticate nothing.
 */
export function configuredProviders(
  original: WebhookAuthOptions,
  config: ProvidersConfig,
  now?: () => number,
): WebhookProvider[] {
  const providers = [originalProvider(original)];
  const stripeSecrets = config.STRIPE_WEBHOOK_SECRETS ?? [];
  if (stripeSecrets.length > 0) {
    providers.push(
      stripeProvider({
        secrets: stripeSecrets,
        toleranceSeconds:
          config.STRIPE_WEBHOOK_TOLERANCE_SECONDS ?? STRIPE_DEFAULT_TOLERANCE_SECONDS,
        now,
        // Test mode unless told: what loadConfig gives every process but a production one.
        binding: { livemode: config.STRIPE_LIVEMODE ?? false, account: config.STRIPE_ACCOUNT_ID },
      }),
    );
  }
  const secrets = (config.STANDARD_WEBHOOK_SECRETS ?? []).map(parseStandardSecret);
  const publicKeys = (config.STANDARD_WEBHOOK_PUBLIC_KEYS ?? []).map(parseStandardPublicKey);
  if (secrets.length + publicKeys.length > 0) {
    providers.push(
      standardWebhooksProvider({
        secrets,
        publicKeys,
        toleranceSeconds:
          config.STANDARD_WEBHOOK_TOLERANCE_SECONDS ?? STANDARD_DEFAULT_TOLERANCE_SECONDS,
        now,
      }),
    );
  }
  return providers;
}
