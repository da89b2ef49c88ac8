import { Context } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import type {
  DisputesRepository,
  OrdersRepository,
  PaymentsRepository,
  RefundsRepository,
  SettlementsRepository,
} from '../db';
import { FailureType } from '../shared/errors';
import {
  type OrderEventKind,
  type OrderPaymentEvent,
  type OrderWorkflow,
  orderWorkflowId,
  paymentRecordedSignal,
} from '../shared/order';
import { OrderIdSearchAttribute } from '../shared/search-attributes';
import { atCrashPoint } from './crash-points';

export interface OrderActivityDeps {
  client: Client;
  orders: OrdersRepository;
  payments: PaymentsRepository;
  refunds: RefundsRepository;
  disputes: DisputesRepository;
  settlements: SettlementsRepository;
}

export interface HandOverResult {
  /** False: an order chain already finished with the event; nothing signalled or started. */
  handedOver: boolean;
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
     * Signal-with-start: starts `order-<id>` if needed and delivers, atomically. Not when a chain
     * already finished with the event: a repeated hand-over (lost worker, operator retry,
     * redelivery) would start a run beside a failed one and hide it from `ops failed`. A running
     * order workflow ignores event IDs it has seen.
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
        deps.client.workflow.signalWithStart<OrderWorkflow, [OrderPaymentEvent]>('orderWorkflow', {
          workflowId: orderWorkflowId(input.orderId),
          // Order work stays with the pool of workers whose payments feed it.
          taskQueue: Context.current().info.taskQueue,
          args: [{ orderId: input.orderId }],
          signal: paymentRecordedSignal,
          signalArgs: [input.event],
          memo: { orderId: input.orderId },
          // Set at start, so `OrderId = 12` finds the run from its first event (the order
          // workflow no longer upserts it, patch 'local-order-steps'; older code still does).
          typedSearchAttributes: [{ key: OrderIdSearchAttribute, value: input.orderId }],
        }),
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
      const order = await deps.orders.findById(input.orderId);
      if (!order) {
        throw ApplicationFailure.create({
          type: FailureType.OrderNotFound,
          message: `order ${input.orderId} does not exist`,
          nonRetryable: true,
        });
      }
      await atCrashPoint('requestRefundReview.commit', () =>
        deps.orders.requestRefundReview(input.orderId),
      );
    },
  };
}
