import { Context } from '@temporalio/activity';
import type { Client } from '@temporalio/client';
import type { DisputesRepository, OrdersRepository } from '../db';
import { disputeRecordedSignal, type OrderDisputeEvent } from '../shared/order';
import { disputeOutcome, type DisputeEvent, type DisputeOutcome } from '../shared/payment-events';
import { atCrashPoint } from './crash-points';
import { signalOrderWorkflow, type HandOverResult } from './order-hand-over';

export interface DisputeActivityDeps {
  client: Client;
  orders: OrdersRepository;
  disputes: DisputesRepository;
}

/** Activities of disputes: their intake, and the order workflow's record of where they stand. */
export function createDisputeActivities(deps: DisputeActivityDeps) {
  return {
    /**
     * Records a dispute event once (UNIQUE provider event ID) and finds its order through the
     * payment's reference; null while that payment is not recorded (it claims the dispute then).
     */
    async recordDispute(
      event: DisputeEvent,
    ): Promise<{ created: boolean; orderId: number | null }> {
      const recorded = await atCrashPoint('recordDispute.commit', () =>
        deps.disputes.record(event),
      );
      Context.current().log.info(
        recorded.created ? 'dispute recorded' : 'dispute already recorded',
        {
          eventId: event.eventId,
          disputeId: event.disputeId,
          status: event.status,
          paymentRef: event.paymentRef,
          orderId: recorded.orderId,
        },
      );
      return recorded;
    },

    /** As handOverToOrder, for a dispute: not once an order run finished with the event. */
    async handOverDisputeToOrder(input: {
      orderId: number;
      event: OrderDisputeEvent;
    }): Promise<HandOverResult> {
      if (await deps.disputes.handledBy(input.event.eventId)) return { handedOver: false };
      await atCrashPoint('handOverDisputeToOrder.signal', () =>
        signalOrderWorkflow(deps.client, input.orderId, disputeRecordedSignal, input.event),
      );
      return { handedOver: true };
    },

    /**
     * Works out where the order's disputes stand from every dispute event recorded for it, and
     * records that on the order. Idempotent: the same events give the same columns.
     */
    async applyDisputes(input: { orderId: number }): Promise<DisputeOutcome> {
      const outcome = disputeOutcome(await deps.disputes.forOrder(input.orderId));
      const order = await deps.orders.findById(input.orderId);
      if (order?.disputeStatus === outcome.status && order.disputeClosedAt === outcome.closedAt) {
        return outcome;
      }
      await atCrashPoint('applyDisputes.commit', () =>
        deps.orders.setDisputeOutcome(input.orderId, outcome),
      );
      return outcome;
    },
  };
}

export type DisputeActivities = ReturnType<typeof createDisputeActivities>;
