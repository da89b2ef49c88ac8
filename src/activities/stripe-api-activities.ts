import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import Stripe from 'stripe';
import type { UnmatchedRepository } from '../db';
import { deliver, toDelivery } from '../http/providers/delivery';
import { keyed } from '../http/providers/provider';
import { STRIPE_PROVIDER, stripeKeys } from '../http/providers/stripe';
import { readStripeObject } from '../http/providers/stripe-objects';
import { FailureType } from '../shared/errors';
import type { ThinEventResult, ThinEventWorkflowInput } from '../shared/thin-event';
import type { PaymentStarter } from '../temporal/payment-starter';
import { atCrashPoint } from './crash-points';

export interface StripeApiActivityDeps {
  /** Stripe's client with the shop's key (STRIPE_API_KEY); absent: no thin event can be fetched. */
  stripe?: Stripe;
  /** Starts what a resolved event is: the same starter, and so the same keys, as the webhook's. */
  starter: PaymentStarter;
  unmatched: Pick<UnmatchedRepository, 'record'>;
  /** SHOP_CURRENCY: a payment in another currency is kept as unmatched, as on the webhook. */
  shopCurrency: string;
}

/** Retries nothing itself: the activity's RetryPolicy schedules attempts, visible in the Web UI. */
export function createStripeClient(options: { apiKey: string; baseUrl?: string }): Stripe {
  const base = options.baseUrl ? new URL(options.baseUrl) : undefined;
  return new Stripe(options.apiKey, {
    maxNetworkRetries: 0,
    // Below the activity's 15 s start-to-close, so a hung call fails as the attempt it is.
    timeout: 10_000,
    telemetry: false,
    ...(base && {
      host: base.hostname,
      port: base.port || (base.protocol === 'https:' ? 443 : 80),
      protocol: base.protocol === 'https:' ? 'https' : 'http',
    }),
  });
}

/** 4xx answers other than 409 (a lock) and 429 (slow down): the same on every attempt. */
function refusedForGood(error: unknown): error is Stripe.errors.StripeError {
  if (!(error instanceof Stripe.errors.StripeError)) return false;
  const status = error.statusCode ?? 0;
  return status >= 400 && status < 500 && status !== 409 && status !== 429;
}

export function createStripeApiActivities(deps: StripeApiActivityDeps) {
  return {
    /** Through the notification's own `fetchRelatedObject`. A read: a crash loses nothing. */
    async fetchThinEventObject(input: ThinEventWorkflowInput): Promise<{ object: unknown }> {
      const { stripe } = deps;
      if (!stripe) {
        throw ApplicationFailure.create({
          type: FailureType.StripeApiRejected,
          message: 'no STRIPE_API_KEY: the thin event cannot be fetched',
          nonRetryable: true,
        });
      }
      // Every handled type relates an object; the union's other members are not ours.
      const notification = stripe.parseEventNotificationWithoutVerification(
        JSON.stringify(input.notification),
      ) as unknown as { fetchRelatedObject(): Promise<unknown> };
      try {
        const object: unknown = await notification.fetchRelatedObject();
        // Plain data for the history (the client's result carries its response non-enumerably).
        return { object: JSON.parse(JSON.stringify(object)) as unknown };
      } catch (error) {
        if (refusedForGood(error)) {
          throw ApplicationFailure.create({
            type: FailureType.StripeApiRejected,
            message: `Stripe refused ${input.notification.related_object.url}: ${error.statusCode} ${error.message}`,
            nonRetryable: true,
          });
        }
        throw error;
      }
    },

    /**
     * Under the event's own key (a redelivery, or its snapshot twin, finds it started); or kept
     * once in the unmatched inbox when it cannot be acted on.
     */
    async deliverThinEvent(input: {
      event: ThinEventWorkflowInput;
      object?: unknown;
      unresolved?: string;
    }): Promise<ThinEventResult> {
      const { event } = input;
      const type = event.notification.type.replace(/^v1\./, '');
      const read =
        input.unresolved === undefined
          ? readStripeObject(type, input.object)
          : ({
              kind: 'unmatched',
              type,
              reason: 'thin_unresolved',
              note: input.unresolved,
              object: event.notification,
            } as const);
      if (read.kind === 'ignored') return { kind: 'ignored', note: read.note };
      // Keyed as the webhook keys it: the workflow's own key is this event ID.
      const delivery = toDelivery(keyed(read, event.notification.id, stripeKeys), {
        provider: STRIPE_PROVIDER,
        shopCurrency: deps.shopCurrency,
      });
      const outcome = await atCrashPoint('deliverThinEvent.deliver', () =>
        deliver(delivery, { payments: deps.starter, unmatched: deps.unmatched }),
      );
      Context.current().log.info('thin event resolved', {
        eventId: event.eventId,
        type: event.notification.type,
        outcome: outcome.kind,
      });
      if (outcome.kind === 'unmatched') {
        return {
          kind: 'unmatched',
          unmatchedId: outcome.id,
          reason: outcome.reason,
        };
      }
      return {
        kind: 'started',
        workflowId: outcome.started.workflowId,
        duplicate: outcome.started.duplicate,
      };
    },
  };
}

export type StripeApiActivities = ReturnType<typeof createStripeApiActivities>;
