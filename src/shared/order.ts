import { defineQuery, defineSignal } from '@temporalio/workflow';

/**
 * The order entity workflow: one per order, the only place where work on that order runs, one
 * step at a time (the seed's WithoutOverlapping($orderId), without a lock cache). Payments reach
 * it as signals; different orders are different workflows and run in parallel.
 */

/** Workflow ID of the entity workflow of one order. */
export function orderWorkflowId(orderId: number): string {
  return `order-${orderId}`;
}

/** A payment that was just recorded for the order, handed over by its payment workflow. */
export interface OrderPaymentEvent {
  eventId: string;
  paymentId: number;
  amount: number;
  /**
   * True for the payment that moved the order from pending to paid (decided atomically in the
   * database): it owns the fulfilment. Any further payment is a double charge to review.
   */
  firstForOrder: boolean;
  /**
   * False when the amount is not the order's total: such a payment never claims the order and
   * is flagged for review as a mismatch, not as a double charge. Absent from events handed over
   * before the check existed.
   */
  amountMatchesOrder?: boolean;
  /**
   * When the webhook accepted the payment (its payment workflow's start, epoch ms): where the
   * payment-to-shipment latency starts. Absent from events handed over before it was added.
   */
  paidAt?: number;
  /**
   * True when disputes of this payment were recorded before it (it claimed them): the order
   * workflow applies them with it. Absent otherwise, and from events of older builds.
   */
  disputed?: boolean;
}

/** A refund event recorded for the order: the order workflow adds its refunds up again. */
export interface OrderRefundEvent {
  kind: 'refund';
  eventId: string;
}

/** A dispute event recorded for the order: the order workflow works out its disputes again. */
export interface OrderDisputeEvent {
  kind: 'dispute';
  eventId: string;
}

/**
 * An operator settled the pending order with the payments it had (`ops settle`): the order
 * workflow fulfils it, once. Who, why and when travel with it, for the workflow's details, log
 * and result.
 */
export interface OrderSettlementEvent {
  kind: 'settlement';
  /** `settlement~<order id>`: one settlement per order. */
  eventId: string;
  settledBy: string;
  reason: string;
  settledAt: string;
  paymentIds: number[];
}

/** Anything the order workflow takes, one at a time. */
export type OrderEvent =
  OrderPaymentEvent | OrderRefundEvent | OrderDisputeEvent | OrderSettlementEvent;

/** The kinds of event the order workflow takes that are not payments. */
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

/** Event ID of the settlement of an order: one per order, so a second hand-over is a duplicate. */
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
  /**
   * What this run did, in order. `already_handled`: another run of the order had finished with
   * the event (a repeated hand-over), so this one did nothing with it.
   */
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
    /** For a settlement's event: who settled the order, when and why. */
    settlement?: Pick<OrderSettlementEvent, 'settledBy' | 'reason' | 'settledAt'>;
  }>;
}

/**
 * The signature of `orderWorkflow`, for typed starts from activities: they import this rather
 * than the workflow module, which imports their types (src/workflows/index.ts checks it fits).
 */
export type OrderWorkflow = (input: OrderWorkflowInput) => Promise<OrderWorkflowResult>;

/**
 * What a FulfilmentFailed failure carries in its details: enough to read the cause without the
 * history. `reason` is why retrying stopped: the seed's Tries (`max_attempts`), retryUntil
 * (`deadline`), or a 4xx (`non_retryable`).
 */
export interface FulfilmentFailedDetails {
  orderId: number;
  eventId: string;
  step: string;
  reason: 'max_attempts' | 'deadline' | 'non_retryable' | 'other';
  attempts: number | undefined;
  lastFailureType: string | undefined;
  lastFailureMessage: string;
}

/** Where the order workflow stands; answered by the `state` query (Web UI, CLI). */
export interface OrderWorkflowState {
  orderId: number;
  current: string | null;
  pending: string[];
  processed: OrderWorkflowResult['processed'];
}

/**
 * A warehouse attempt failed and the server will try again: sent by the notifyWarehouse activity
 * to its own workflow, which cannot see the attempts the server retries, so the Web UI's current
 * details can say how the call stands. Best effort: a lost one only leaves the details stale.
 */
export interface WarehouseAttemptFailed {
  attempt: number;
  /** The retry policy's maximumAttempts (0: unlimited). */
  maximumAttempts: number;
  nextRetryDelayMs: number;
  /** Short: the HTTP status ("503"), or "timeout", "network". */
  lastFailure: string;
}

export const paymentRecordedSignal = defineSignal<[OrderPaymentEvent]>('paymentRecorded');
export const refundRecordedSignal = defineSignal<[OrderRefundEvent]>('refundRecorded');
export const disputeRecordedSignal = defineSignal<[OrderDisputeEvent]>('disputeRecorded');
export const orderSettledSignal = defineSignal<[OrderSettlementEvent]>('orderSettled');
export const warehouseAttemptFailedSignal =
  defineSignal<[WarehouseAttemptFailed]>('warehouseAttemptFailed');
export const orderStateQuery = defineQuery<OrderWorkflowState>('state');
