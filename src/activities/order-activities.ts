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
  /** Temporal client on the worker's own connection, for signal-with-start. */
  client: Client;
  orders: OrdersRepository;
  payments: PaymentsRepository;
  refunds: RefundsRepository;
  disputes: DisputesRepository;
  settlements: SettlementsRepository;
}

/** Whether the hand-over reached the order's workflow. */
export interface HandOverResult {
  /**
   * False when an order workflow chain already finished with the event (done, or failed for
   * good and waiting for `ops retry`): nothing was signalled and no run was started.
   */
  handedOver: boolean;
}

/** Which event an order run checks or marks: its ID and kind; a settlement is its order's. */
interface OrderEventRef {
  eventId: string;
  kind?: OrderEventKind;
  /** For a settlement, kept once per order. */
  orderId?: number;
}

/** A settlement's row is its order's (one per order). */
function settledOrder(input: OrderEventRef): number {
  if (input.orderId === undefined) throw new TypeError('a settlement event names its order');
  return input.orderId;
}

/** Activities that feed and serve the order entity workflow. */
export function createOrderActivities(deps: OrderActivityDeps) {
  /** Where the event's row records the chain that finished with it (a settlement: its own). */
  function ledgerOf(kind: OrderEventRef['kind']) {
    if (kind === 'refund') return deps.refunds;
    if (kind === 'dispute') return deps.disputes;
    return deps.payments;
  }

  return {
    /**
     * Hands a recorded payment to the order's workflow: signal-with-start starts `order-<id>` if
     * it is not running and delivers the event either way, atomically. Not when an order run
     * already finished with the event: a hand-over repeated after that (its first attempt lost
     * with its worker after the signal, an operator's retry of the payment, a redelivery) would
     * start a new run beside a failed one and hide it from `ops failed`. A retry may still
     * deliver the event twice to a running order workflow, which ignores event IDs it has seen.
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
          // The queue this payment runs on (`payments` in production): order work stays with the
          // same pool of workers as the payments that feed it.
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

    /** The order workflow chain that finished with an event, or null while none has. */
    async orderEventHandledBy(input: OrderEventRef): Promise<{ chain: string | null }> {
      const chain =
        input.kind === 'settlement'
          ? await deps.settlements.handledBy(settledOrder(input))
          : await ledgerOf(input.kind).handledBy(input.eventId);
      return { chain: chain ?? null };
    },

    /**
     * Records that the order workflow chain `chain` (its first run ID) finished with the event:
     * done, or failed for good. The first chain to finish with it stays.
     */
    async markOrderEventHandled(input: OrderEventRef & { chain: string }): Promise<void> {
      await atCrashPoint('markOrderEventHandled.commit', () =>
        input.kind === 'settlement'
          ? deps.settlements.markHandled(settledOrder(input), input.chain)
          : ledgerOf(input.kind).markHandled(input.eventId, input.chain),
      );
    },

    /** Flags the order for a refund review; idempotent (the first flag stays). */
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
