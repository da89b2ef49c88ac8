import type { RecordUnmatchedInput, UnmatchedRepository } from '../../db';
import type { DisputeEvent, RefundEvent } from '../../shared/payment-events';
import type { PaymentWorkflowInput } from '../../shared/payment';
import type { PaymentStarter, StartedPayment } from '../../temporal/payment-starter';
import type { ProviderNotification, WebhookProvider } from './provider';

/** A payment's start: the workflow's input, with the provider's reference and currency. */
export type PaymentStart = PaymentWorkflowInput;

/** What a delivery starts: payments, refunds and disputes, each keyed by its event ID. */
export type ProviderEventStarter = PaymentStarter;

/** One verified provider event, mapped once into what this shop does with it. */
export type Delivery =
  | { kind: 'payment'; input: PaymentStart }
  | { kind: 'refund'; event: RefundEvent }
  | { kind: 'dispute'; event: DisputeEvent }
  /** Kept in the unmatched inbox for an operator; `note` says what did not match. */
  | { kind: 'unmatched'; entry: RecordUnmatchedInput; note: string };

export type Actionable = Extract<
  ProviderNotification,
  { kind: 'payment' | 'refund' | 'dispute' | 'unmatched' }
>;

export interface DeliveryContext {
  provider: Pick<WebhookProvider, 'name' | 'qualifyEventId' | 'qualifyPaymentRef'>;
  /** The provider's event ID as sent (the body's, or the verified header's). */
  providerEventId: string;
  /** The shop's currency (SHOP_CURRENCY): a payment in another one pays nothing. */
  shopCurrency: string;
}

/**
 * Maps a notification to its delivery: the event ID and payment reference qualified by
 * provider; a payment for a reference that is not one of our orders, or in another currency, to
 * the unmatched inbox (a signed delivery answered 4xx is retried for days, then the endpoint is
 * disabled). Whether the order exists is the payment workflow's to find out.
 */
export function toDelivery(notification: Actionable, context: DeliveryContext): Delivery {
  const { provider, providerEventId, shopCurrency } = context;
  const eventId = provider.qualifyEventId(providerEventId);
  const unmatched = (
    reason: RecordUnmatchedInput['reason'],
    note: string,
    payload: unknown,
  ): Delivery => ({
    kind: 'unmatched',
    entry: { reason, provider: provider.name, eventId, payload },
    note,
  });
  switch (notification.kind) {
    case 'unmatched':
      return unmatched(notification.reason, notification.note, {
        event: notification.event,
        providerEventId,
        object: notification.object,
      });
    case 'refund':
      return {
        kind: 'refund',
        event: {
          ...notification.refund,
          eventId,
          paymentRef: provider.qualifyPaymentRef(notification.paymentRef),
        },
      };
    case 'dispute':
      return {
        kind: 'dispute',
        event: {
          ...notification.dispute,
          eventId,
          paymentRef: provider.qualifyPaymentRef(notification.paymentRef),
        },
      };
    case 'payment': {
      const { orderRef, amount, currency } = notification;
      // The event's own ID, as sent, names the payment when the provider gives no reference.
      const paymentRef = provider.qualifyPaymentRef(notification.paymentRef ?? providerEventId);
      const payment = { event: notification.event, eventId, amount, currency, paymentRef };
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
  | { kind: 'started'; started: StartedPayment }
  | { kind: 'unmatched'; id: number; created: boolean };

export interface DeliveryDeps {
  payments: ProviderEventStarter;
  unmatched: Pick<UnmatchedRepository, 'record'>;
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
    case 'unmatched':
      return { kind: 'unmatched', ...(await deps.unmatched.record(delivery.entry)) };
  }
}
