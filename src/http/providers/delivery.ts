import type { RecordUnmatchedInput, UnmatchedReason, UnmatchedRepository } from '../../db';
import type { PaymentWorkflowInput } from '../../shared/payment';
import type { DisputeEvent, RefundEvent } from '../../shared/payment-events';
import type { ThinEventWorkflowInput } from '../../shared/thin-event';
import type { PaymentStarter, StartedPayment } from '../../temporal/payment-starter';
import type { StartedThinEvent, ThinEventStarter } from '../../temporal/thin-event-starter';
import type { ProviderEvent } from './provider';

/** One verified provider event, mapped once into what this shop does with it. */
export type Delivery =
  | { kind: 'payment'; input: PaymentWorkflowInput }
  | { kind: 'refund'; event: RefundEvent }
  | { kind: 'dispute'; event: DisputeEvent }
  /** A Stripe thin event: a workflow fetches its object, then delivers that. */
  | { kind: 'thin'; provider: string; type: string; input: ThinEventWorkflowInput }
  /** Kept in the unmatched inbox for an operator; `note` says what did not match. */
  | { kind: 'unmatched'; entry: RecordUnmatchedInput; note: string };

export type Actionable = Exclude<ProviderEvent, { kind: 'ignored' }>;

/**
 * Applies the shop's own rules to a keyed event: a payment for a reference that is not one of
 * our orders, or in another currency than the shop's (SHOP_CURRENCY), goes to the unmatched inbox
 * (a signed delivery answered 4xx is retried for days, then the endpoint is disabled). Whether
 * the order exists is the payment workflow's to find out.
 */
export function toDelivery(
  event: Actionable,
  shop: { provider: string; shopCurrency: string },
): Delivery {
  const { provider, shopCurrency } = shop;
  const unmatched = (reason: UnmatchedReason, note: string, payload: unknown): Delivery => ({
    kind: 'unmatched',
    entry: { reason, provider, eventId: event.eventId, payload },
    note,
  });
  switch (event.kind) {
    case 'refund':
      return { kind: 'refund', event: event.refund };
    case 'dispute':
      return { kind: 'dispute', event: event.dispute };
    case 'thin':
      return {
        kind: 'thin',
        provider,
        type: event.type,
        input: { eventId: event.eventId, notification: event.notification },
      };
    case 'unmatched': {
      const { type, sentId, object } = event;
      return unmatched(event.reason, event.note, { event: type, id: sentId, object });
    }
    case 'payment': {
      const { type, eventId, orderRef, amount, currency, paymentRef } = event;
      const payment = { event: type, eventId, amount, currency, paymentRef };
      if (typeof orderRef === 'string') {
        return unmatched(
          'foreign_order_ref',
          `the order reference ${JSON.stringify(orderRef)} is not an order ID of this shop`,
          { ...payment, orderRef },
        );
      }
      if (currency !== undefined && currency !== shopCurrency) {
        // An amount in another unit must not pay (or be compared with) the order's total.
        return unmatched(
          'currency',
          `the payment is in ${currency.toUpperCase()}, but this shop's orders are in ${shopCurrency.toUpperCase()} (SHOP_CURRENCY)`,
          { ...payment, orderId: orderRef },
        );
      }
      return {
        kind: 'payment',
        input: {
          eventId,
          orderId: orderRef,
          amount,
          paymentRef,
          ...(currency ? { currency } : {}),
        },
      };
    }
  }
}

export type DeliveryOutcome =
  | { kind: 'started'; started: StartedPayment | StartedThinEvent }
  | { kind: 'unmatched'; id: number; created: boolean; reason: UnmatchedReason; note: string };

export interface DeliveryDeps {
  payments: PaymentStarter;
  unmatched: Pick<UnmatchedRepository, 'record'>;
  /** Starts the fetch of a thin event's object; unset (no STRIPE_API_KEY): kept as unmatched. */
  thinEvents?: ThinEventStarter;
}

/** Starts the delivery's workflow, or keeps it in the unmatched inbox. */
export async function deliver(delivery: Delivery, deps: DeliveryDeps): Promise<DeliveryOutcome> {
  switch (delivery.kind) {
    case 'payment':
      return { kind: 'started', started: await deps.payments.start(delivery.input) };
    case 'refund':
      return { kind: 'started', started: await deps.payments.startRefund(delivery.event) };
    case 'dispute':
      return { kind: 'started', started: await deps.payments.startDispute(delivery.event) };
    case 'thin':
      if (deps.thinEvents) {
        return { kind: 'started', started: await deps.thinEvents.start(delivery.input) };
      }
      return keep(deps.unmatched, {
        kind: 'unmatched',
        entry: {
          reason: 'thin_unresolved',
          provider: delivery.provider,
          eventId: delivery.input.eventId,
          payload: { event: delivery.type, notification: delivery.input.notification },
        },
        note: 'a thin event, and no STRIPE_API_KEY to fetch its object with',
      });
    case 'unmatched':
      return keep(deps.unmatched, delivery);
  }
}

async function keep(
  inbox: DeliveryDeps['unmatched'],
  delivery: Extract<Delivery, { kind: 'unmatched' }>,
): Promise<DeliveryOutcome> {
  const { id, created } = await inbox.record(delivery.entry);
  return { kind: 'unmatched', id, created, reason: delivery.entry.reason, note: delivery.note };
}
