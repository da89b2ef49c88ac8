import { z } from 'zod';
import { eventIdText, eventType, readPayment } from './payment-fields';
import {
  namedKeys,
  type ProviderNotification,
  type WebhookProvider,
  webhookProvider,
} from './provider';
import { readerOf, STRIPE_EVENT_TYPES, stripeId } from './stripe-objects';
import { createStripeVerifier, type StripeSignatureOptions } from './stripe-signature';

export const STRIPE_WEBHOOK_PATH = '/api/v1/webhooks/stripe';
export const STRIPE_PROVIDER = 'stripe';
/** `stripe~evt_…`, `stripe~pi_…`: the webhook's keys, and a thin event's fetched object's. */
export const stripeKeys = namedKeys(STRIPE_PROVIDER);

/** Thin events (event destinations' thin payload style) name the snapshot type with this prefix. */
const THIN_TYPE_PREFIX = 'v1.';

/** Which Stripe account and mode this shop's events come from (STRIPE_LIVEMODE, STRIPE_ACCOUNT_ID). */
export interface StripeBinding {
  livemode: boolean;
  /** `acct_…`; unset: events are not checked for their account. */
  account?: string;
}

/** The mode and account an event came from, against the shop's; undefined when it is ours. */
function bindingMismatch(
  binding: StripeBinding,
  livemode: boolean,
  account: string | undefined,
): Pick<Extract<ProviderNotification, { kind: 'unmatched' }>, 'reason' | 'note'> | undefined {
  if (livemode !== binding.livemode) {
    return {
      reason: 'livemode',
      note: `a ${livemode ? 'live' : 'test'}-mode event, but this shop takes ${binding.livemode ? 'live' : 'test'}-mode events (STRIPE_LIVEMODE)`,
    };
  }
  if (binding.account !== undefined && account !== binding.account) {
    return {
      reason: 'account',
      note: `an event of ${account ?? 'the platform account'}, but this shop is ${binding.account} (STRIPE_ACCOUNT_ID)`,
    };
  }
  return undefined;
}

// A snapshot event: `{"id":"evt_…","object":"event","type",…,"data":{"object":{…}}}`.
const snapshotEvent = z.object({
  id: eventIdText,
  type: eventType,
  livemode: z.boolean(),
  account: stripeId.optional(),
  data: z.object({ object: z.unknown() }),
});

// A thin event notification (event destinations): the object is fetched, never sent.
const thinEvent = z.object({
  id: eventIdText,
  object: z.literal('v2.core.event'),
  type: eventType,
  livemode: z.boolean(),
  context: z.string().max(255).optional(),
  related_object: z
    .object({ id: stripeId, type: z.string().max(100), url: z.string().startsWith('/').max(500) })
    .nullable()
    .optional(),
});

/** The notification schema of a Stripe endpoint bound to one account and mode. */
function stripeNotification(binding: StripeBinding): z.ZodType<ProviderNotification> {
  return z
    .object({ object: z.string().optional() })
    .loose()
    .transform((body, ctx): ProviderNotification => {
      if (body.object === 'v2.core.event') {
        return readPayment(body, ctx, thinEvent, (thin): ProviderNotification => {
          // The context is the account the event happened on (`acct_…`, then sub-contexts).
          const mismatch = bindingMismatch(binding, thin.livemode, thin.context?.split('/')[0]);
          if (mismatch) {
            return { kind: 'unmatched', type: thin.type, id: thin.id, ...mismatch, object: thin };
          }
          const type = thin.type.startsWith(THIN_TYPE_PREFIX)
            ? thin.type.slice(THIN_TYPE_PREFIX.length)
            : undefined;
          if (type === undefined || !(STRIPE_EVENT_TYPES as readonly string[]).includes(type)) {
            return { kind: 'ignored', type: thin.type };
          }
          if (!thin.related_object) {
            return {
              kind: 'unmatched',
              type: thin.type,
              id: thin.id,
              reason: 'thin_unresolved',
              note: 'a thin event without a related object: nothing to fetch',
              object: thin,
            };
          }
          return {
            kind: 'thin',
            type: thin.type,
            id: thin.id,
            notification: { ...thin, object: 'v2.core.event', related_object: thin.related_object },
          };
        });
      }
      return readPayment(body, ctx, snapshotEvent, (event): ProviderNotification => {
        const mismatch = bindingMismatch(binding, event.livemode, event.account);
        const reader = readerOf(event.type);
        const read: ProviderNotification = mismatch
          ? { kind: 'unmatched', type: event.type, ...mismatch, object: event.data.object }
          : reader
            ? reader(event.data.object, under(ctx, ['data', 'object']), event.type)
            : { kind: 'ignored', type: event.type };
        return read.kind === 'ignored' ? read : { ...read, id: event.id };
      });
    });
}

/** `ctx` for a part of the body: its issues name their field from the body's root. */
function under(ctx: z.RefinementCtx, prefix: PropertyKey[]): z.RefinementCtx {
  return {
    ...ctx,
    addIssue: (issue) =>
      ctx.addIssue(
        typeof issue === 'string' ? issue : { ...issue, path: [...prefix, ...(issue.path ?? [])] },
      ),
  };
}

export interface StripeProviderOptions extends StripeSignatureOptions {
  binding: StripeBinding;
}

/**
 * Stripe, verified with `Stripe-Signature`; its events are keyed `stripe~<evt id>`, its payments
 * `stripe~<PaymentIntent id>`. Snapshot events carry their object; thin events are fetched.
 */
export function stripeProvider(options: StripeProviderOptions): WebhookProvider {
  return webhookProvider({
    name: STRIPE_PROVIDER,
    path: STRIPE_WEBHOOK_PATH,
    verify: createStripeVerifier(options),
    notification: stripeNotification(options.binding),
    keys: stripeKeys,
  });
}
