import { defineQuery, defineSignal } from '@temporalio/workflow';

/**
 * The order entity workflow: one per order, the only place where work on that order runs, one
 * step at a time (the seed's WithoutOverlapping($orderId), without a lock cache). Payments reach
 * it as signals; different orders are different workflows and run in parallel.
 */

export function orderWorkflowId(orderId: number): string {
  return `order-${orderId}`;
}

export interface OrderPaymentEvent {
  eventId: string;
  paymentId: number;
  amount: number;
  /** Moved the order from pending to paid (atomically in the DB), so it owns the fulfilment. */
  firstForOrder: boolean;
  /** False: not the order's total; flagged as a mismatch, never claims. Absent before the check. */
  amountMatchesOrder?: boolean;
  /** The payment workflow's start (epoch ms): where payment-to-shipment latency starts. */
  paidAt?: number;
  /** Disputes recorded before the payment (it claimed them) apply with it. Absent: none. */
  disputed?: boolean;
}

export interface OrderRefundEvent {
  kind: 'refund';
  eventId: string;
}

export interface OrderDisputeEvent {
  kind: 'dispute';
  eventId: string;
}

/** `ops settle`: the operator settled the pending order with its payments; fulfilled once. */
export interface OrderSettlementEvent {
  kind: 'settlement';
  eventId: string;
  settledBy: string;
  reason: string;
  settledAt: string;
  paymentIds: number[];
}

export type OrderEvent =
  OrderPaymentEvent | OrderRefundEvent | OrderDisputeEvent | OrderSettlementEvent;

export type OrderEventKind = Exclude<OrderEvent, OrderPaymentEvent>['kind'];

export function isRefundEvent(event: OrderEvent): event is OrderRefundEvent {
  return 'kind' in event && event.kind === 'refund';
}

export function isDisputeEvent(event: OrderEvent): event is OrderDisputeEvent {
  return 'kind' in event && event.kind === 'dispute';
}

export function isSettlementEvent(event: OrderEvent): event is OrderSettlementEvent {
  return 'kind' in event && event.kind === 'settlement';
}

export function settlementEventId(orderId: number): string {
  return `settlement~${orderId}`;
}

export interface OrderWorkflowInput {
  orderId: number;
  /** Carried over by continue-as-new: events not yet processed, and those already seen. */
  pending?: OrderEvent[];
  seenEventIds?: string[];
}

export interface OrderWorkflowResult {
  orderId: number;
  /** What this run did, in order; `already_handled`: another run of the order had finished it. */
  processed: Array<{
    eventId: string;
    outcome:
      | 'fulfilled'
      | 'refunded_before_shipment'
      | 'refund_review'
      | 'refund'
      | 'dispute'
      | 'failed'
      | 'already_handled';
    settlement?: Pick<OrderSettlementEvent, 'settledBy' | 'reason' | 'settledAt'>;
  }>;
}

// `orderWorkflow`'s signature, for typed starts from activities: the workflow module imports their
// types, so they import this (src/workflows/index.ts checks it fits).
export type OrderWorkflow = (input: OrderWorkflowInput) => Promise<OrderWorkflowResult>;

/** Why retrying stopped: the attempts ran out, the deadline passed, or a 4xx. */
export interface FulfilmentFailedDetails {
  orderId: number;
  eventId: string;
  step: string;
  reason: 'max_attempts' | 'deadline' | 'non_retryable' | 'other';
  attempts: number | undefined;
  lastFailureType: string | undefined;
  lastFailureMessage: string;
}

export interface OrderWorkflowState {
  orderId: number;
  current: string | null;
  pending: string[];
  processed: OrderWorkflowResult['processed'];
}

// Sent by notifyWarehouse to its own workflow, which cannot see the server's retries, for the Web
// UI's details. Best effort: a lost one only leaves them stale.
export interface WarehouseAttemptFailed {
  attempt: number;
  /** The retry policy's maximumAttempts (0: unlimited). */
  maximumAttempts: number;
  nextRetryDelayMs: number;
  lastFailure: string;
}

export const paymentRecordedSignal = defineSignal<[OrderPaymentEvent]>('paymentRecorded');
export const refundRecordedSignal = defineSignal<[OrderRefundEvent]>('refundRecorded');
export const disputeRecordedSignal = defineSignal<[OrderDisputeEvent]>('disputeRecorded');
export const orderSettledSignal = defineSignal<[OrderSettlementEvent]>('orderSettled');
export const warehouseAttemptFailedSignal =
  defineSignal<[WarehouseAttemptFailed]>('warehouseAttemptFailed');
export const orderStateQuery = defineQuery<OrderWorkflowState>('state');
