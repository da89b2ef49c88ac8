import type { Client } from '@temporalio/client';
import type { Settlement, SettlementsRepository } from '../db';
import { PAYMENTS_TASK_QUEUE } from '../shared/constants';
import {
  orderSettledSignal,
  orderWorkflowId,
  settlementEventId,
  type OrderSettlementEvent,
  type OrderWorkflow,
} from '../shared/order';
import { OrderIdSearchAttribute } from '../shared/search-attributes';

/**
 * The pending-to-paid claim decides a race with a real payment; the one event per order and its
 * handled-by record keep the fulfilment to one.
 */

export type SettleOutcome =
  | { kind: 'settled'; settlement: Settlement; paidAmount: number }
  | { kind: 'already_settled'; settlement: Settlement }
  | { kind: 'refused'; reason: string };

/** Records the settlement, or says why the order cannot be settled (nothing written then). */
export async function recordSettlement(
  settlements: Pick<SettlementsRepository, 'settle'>,
  input: { orderId: number; settledBy: string; reason: string },
): Promise<SettleOutcome> {
  const result = await settlements.settle(input);
  if (result.kind !== 'refused') return result;
  const { orderId } = input;
  switch (result.why) {
    case 'order_not_found':
      return { kind: 'refused', reason: `order ${orderId} does not exist` };
    case 'already_paid':
      return { kind: 'refused', reason: `order ${orderId} is already paid: nothing to settle` };
    case 'refunded':
      return {
        kind: 'refused',
        reason: `order ${orderId} has refunds recorded: settling it would ship what was given back`,
      };
    case 'no_payment':
      return { kind: 'refused', reason: `order ${orderId} has no payment to settle it with` };
  }
}

/** The order workflow's event for a settlement: the same for every run of the command. */
export function settlementEvent(settlement: Settlement): OrderSettlementEvent {
  return {
    kind: 'settlement',
    eventId: settlementEventId(settlement.orderId),
    settledBy: settlement.settledBy,
    reason: settlement.reason,
    settledAt: settlement.settledAt,
    paymentIds: settlement.paymentIds,
  };
}

/** A repeat reaches a workflow that has seen the event ID, or a run that finds it handled. */
export async function handOverSettlement(client: Client, settlement: Settlement): Promise<string> {
  const { orderId } = settlement;
  const workflowId = orderWorkflowId(orderId);
  await client.workflow.signalWithStart<OrderWorkflow, [OrderSettlementEvent]>('orderWorkflow', {
    workflowId,
    taskQueue: PAYMENTS_TASK_QUEUE,
    args: [{ orderId }],
    signal: orderSettledSignal,
    signalArgs: [settlementEvent(settlement)],
    memo: { orderId },
    typedSearchAttributes: [{ key: OrderIdSearchAttribute, value: orderId }],
  });
  return workflowId;
}
