import {
  type Config,
  DEV_STANDARD_WEBHOOK_SECRET,
  DEV_STRIPE_WEBHOOK_SECRET,
} from '../../src/config';
import { STANDARD_WEBHOOK_PATH } from '../../src/http/providers/standard-webhooks';
import { STRIPE_WEBHOOK_PATH } from '../../src/http/providers/stripe';

/**
 * The banner lines of `npm start` for the Stripe and Standard Webhooks endpoints: where each is
 * served and whether it runs on its public dev secret (fine for the demo; a real account's
 * deliveries need its own secret, README "Connect a payment provider").
 */
export function providerLines(
  config: Pick<
    Config,
    'STRIPE_WEBHOOK_SECRETS' | 'STANDARD_WEBHOOK_SECRETS' | 'STANDARD_WEBHOOK_PUBLIC_KEYS'
  >,
  apiUrl: string,
): string[] {
  const lines: string[] = [];
  const secrets = (list: readonly string[], dev: string) =>
    list.length === 1 && list[0] === dev ? 'dev secret' : `${list.length} secret(s) configured`;
  if (config.STRIPE_WEBHOOK_SECRETS.length > 0) {
    lines.push(
      `  Stripe webhook   ${apiUrl}${STRIPE_WEBHOOK_PATH} (${secrets(config.STRIPE_WEBHOOK_SECRETS, DEV_STRIPE_WEBHOOK_SECRET)})`,
    );
  }
  const keys = config.STANDARD_WEBHOOK_PUBLIC_KEYS.length;
  if (config.STANDARD_WEBHOOK_SECRETS.length + keys > 0) {
    lines.push(
      `  Standard webhook ${apiUrl}${STANDARD_WEBHOOK_PATH} (${secrets(config.STANDARD_WEBHOOK_SECRETS, DEV_STANDARD_WEBHOOK_SECRET)}${keys > 0 ? `, ${keys} public key(s)` : ''})`,
    );
  }
  return lines;
}
