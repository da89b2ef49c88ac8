import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type {
  DisputesRepository,
  OrdersRepository,
  PaymentsRepository,
  RefundsRepository,
  SettlementsRepository,
} from '../db';
import {
  type OrderEventKind,
  type OrderPaymentEvent,
  paymentRecordedSignal,
} from '../shared/order';
import { atCrashPoint } from './crash-points';
import { signalOrderWorkflow, type HandOverResult } from './order-hand-over';
import { findOrderOrFail } from './order-lookup';

export interface OrderActivityDeps {
  client: Client;
  orders: OrdersRepository;
  payments: PaymentsRepository;
  refunds: RefundsRepository;
  disputes: DisputesRepository;
  settlements: SettlementsRepository;
}

interface OrderEventRef {
  eventId: string;
  kind?: OrderEventKind;
  /** For a settlement, kept once per order. */
  orderId?: number;
}

function settledOrder(input: OrderEventRef): number {
  if (input.orderId === undefined) throw new TypeError('a settlement event names its order');
  return input.orderId;
}

export function createOrderActivities(deps: OrderActivityDeps) {
  /** Where the event's row records the chain that finished with it (a settlement: its own). */
  function ledgerOf(kind: OrderEventRef['kind']) {
    if (kind === 'refund') return deps.refunds;
    if (kind === 'dispute') return deps.disputes;
    return deps.payments;
  }

  return {
    /**
     * Hands the payment to its order's workflow (./order-hand-over.ts). Not when a chain already
     * finished with the event: a repeated hand-over (lost worker, operator retry, redelivery)
     * would start a run beside a failed one and hide it from `ops failed`.
     */
    async handOverToOrder(input: {
      orderId: number;
      event: OrderPaymentEvent;
    }): Promise<HandOverResult> {
      const handledBy = await deps.payments.handledBy(input.event.eventId);
      if (handledBy) {
        Context.current().log.info('payment already handled by the order workflow', {
          orderId: input.orderId,
          eventId: input.event.eventId,
          orderChain: handledBy,
        });
        return { handedOver: false };
      }
      await atCrashPoint('handOverToOrder.signal', () =>
        signalOrderWorkflow(deps.client, input.orderId, paymentRecordedSignal, input.event),
      );
      return { handedOver: true };
    },

    async orderEventHandledBy(input: OrderEventRef): Promise<{ chain: string | null }> {
      const chain =
        input.kind === 'settlement'
          ? await deps.settlements.handledBy(settledOrder(input))
          : await ledgerOf(input.kind).handledBy(input.eventId);
      return { chain: chain ?? null };
    },

    /** The first chain (its first run ID) to finish with the event, done or failed, stays. */
    async markOrderEventHandled(input: OrderEventRef & { chain: string }): Promise<void> {
      await atCrashPoint('markOrderEventHandled.commit', () =>
        input.kind === 'settlement'
          ? deps.settlements.markHandled(settledOrder(input), input.chain)
          : ledgerOf(input.kind).markHandled(input.eventId, input.chain),
      );
    },

    async requestRefundReview(input: { orderId: number; eventId: string }): Promise<void> {
      await findOrderOrFail(deps.orders, input.orderId);
      await atCrashPoint('requestRefundReview.commit', () =>
        deps.orders.requestRefundReview(input.orderId),
      );
    },
  };
}
