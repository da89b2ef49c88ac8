import {
  ApplicationFailure,
  continueAsNew,
  log,
  patched,
  proxyActivities,
  setHandler,
  startChild,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import { refundReviewAlertWorkflowId, type Alert } from '../shared/alert';
import { FailureType, NON_RETRYABLE_FAILURE_TYPES } from '../shared/errors';
import {
  orderStateQuery,
  paymentRecordedSignal,
  type OrderPaymentEvent,
  type OrderWorkflowInput,
  type OrderWorkflowResult,
} from '../shared/order';
import { RetryBudgets } from '../shared/retry-budget';
import { OrderIdSearchAttribute } from '../shared/search-attributes';
import type { alertWorkflow } from './alert';
import { startInvoiceWorkflow } from './invoice';
import { databaseCall } from './activity-options';
import { withRetryBudget, type RetriesExhaustedDetails } from './retry';

// One proxy per activity, each with its own Web UI summary (metadata, not matched on replay).
const { setShipmentStatus } = proxyActivities<Activities>({
  ...databaseCall,
  summary: 'Record the shipment status on the order',
});
const { requestRefundReview } = proxyActivities<Activities>({
  ...databaseCall,
  summary: 'Flag the order for a refund review (double charge or wrong amount)',
});
const { awardLoyaltyPoints } = proxyActivities<Activities>({
  ...databaseCall,
  summary: 'Award the loyalty points for the order',
});

// The confirmation mail. A send gives up after 8 s (3 s per SMTP step), so 15 s start-to-close
// only catches a hung worker. A mail server that is down for a while is retried for about an
// hour (10 attempts, 10 s doubling to 10 min); a permanent 5xx refusal is not retried.
const { sendOrderConfirmation } = proxyActivities<Activities>({
  summary: 'Send the order confirmation mail',
  startToCloseTimeout: '15 seconds',
  retry: {
    initialInterval: '10 seconds',
    backoffCoefficient: 2,
    maximumInterval: '10 minutes',
    maximumAttempts: 10,
    nonRetryableErrorTypes: [...NON_RETRYABLE_FAILURE_TYPES],
  },
});

// The warehouse call, one attempt at a time (the budget in RetryBudgets.warehouseNotification
// decides retries). The HTTP client gives up after WAREHOUSE_TIMEOUT_MS (5 s by default, 7 s at
// most); 8 s start-to-close abandons a worker that hangs beyond that, and stays shorter than the
// first 10 s backoff, so attempts never overlap. The activity heartbeats every second while it
// waits: a crashed worker is noticed after 3 s instead of 8 s.
const warehouseCallOptions = {
  startToCloseTimeout: '8 seconds',
  heartbeatTimeout: '3 seconds',
} as const;

/**
 * The entity workflow of one order (ID `order-<id>`): every effect on the order runs here, one
 * at a time. Started (or fed, when running) by signal-with-start from the payment workflows;
 * it completes once nothing is left to do, and the next payment for the order starts a new run.
 * The first payment fulfils the order; any further one is a double charge, flagged for review.
 */
export async function orderWorkflow(input: OrderWorkflowInput): Promise<OrderWorkflowResult> {
  // Patch 'search-attributes-v1' (2026-11-29): tag the run with its order, so the Web UI and
  // `temporal workflow list --query 'OrderId = 12'` find it. The upsert is a new command: a run
  // started before the deploy must not issue it when a new worker replays it. It can go once no
  // order run started before the deploy is open (runs last hours at most, so from 2026-12-06 if
  // deployed by 2026-11-29; check first, see docs/deploys.md): deprecatePatch, then delete.
  if (patched('search-attributes-v1')) {
    upsertSearchAttributes([{ key: OrderIdSearchAttribute, value: input.orderId }]);
  }
  const pending: OrderPaymentEvent[] = [...(input.pending ?? [])];
  // Handover activities are at-least-once: the same event may be signalled twice.
  const seen = new Set<string>(input.seenEventIds ?? pending.map((e) => e.eventId));
  const processed: OrderWorkflowResult['processed'] = [];
  let current: string | null = null;

  setHandler(paymentRecordedSignal, (event) => {
    if (seen.has(event.eventId)) return;
    seen.add(event.eventId);
    pending.push(event);
  });
  setHandler(orderStateQuery, () => ({
    orderId: input.orderId,
    current,
    pending: pending.map((e) => e.eventId),
    processed,
  }));

  while (pending.length > 0) {
    const event = pending.shift()!;
    current = event.eventId;
    if (event.firstForOrder) {
      await fulfil(input.orderId, event);
      processed.push({ eventId: event.eventId, outcome: 'fulfilled' });
    } else {
      await flagForRefundReview(input.orderId, event);
      processed.push({ eventId: event.eventId, outcome: 'refund_review' });
    }
    current = null;
    if (workflowInfo().continueAsNewSuggested && pending.length > 0) {
      // Bounded history for an order that keeps receiving events.
      await continueAsNew<typeof orderWorkflow>({
        orderId: input.orderId,
        pending,
        seenEventIds: [...seen],
      });
    }
  }
  return { orderId: input.orderId, processed };
}

/**
 * Fulfils a paid order: the warehouse under its retry budget (compensating when the budget runs
 * out), then the confirmation mail and the loyalty points.
 */
async function fulfil(orderId: number, event: OrderPaymentEvent): Promise<void> {
  try {
    await withRetryBudget(
      'notify-warehouse',
      RetryBudgets.warehouseNotification,
      warehouseCallOptions,
      'notifyWarehouse',
      { orderId },
    );
  } catch (err) {
    if (!(err instanceof ApplicationFailure) || err.type !== FailureType.RetriesExhausted)
      throw err;
    // The seed's failed(): leave the order in a state people can see and act on.
    await setShipmentStatus({ orderId, status: 'failed' });
    const details = err.details?.[0] as RetriesExhaustedDetails;
    log.error('fulfilment failed; order marked shipment_status=failed', {
      orderId,
      eventId: event.eventId,
      ...details,
    });
    throw ApplicationFailure.create({
      type: FailureType.FulfilmentFailed,
      message: `order ${orderId} could not be handed to the warehouse: ${err.message}`,
      details: [{ orderId, eventId: event.eventId, ...details }],
      nonRetryable: true,
      cause: err,
    });
  }
  await setShipmentStatus({ orderId, status: 'requested' });
  // Both run only here, one at a time per order: the mail's send-then-stamp guard and the
  // ledger's unique key never race with another run for the same order.
  await sendOrderConfirmation({ orderId });
  await awardLoyaltyPoints({ orderId });
  // Patch 'invoice-after-fulfilment' (2026-11-29): starting the invoice (an abandoned child on
  // task queue `heavy`) is a new command. An order workflow that ran this step before the deploy
  // must not issue it on replay, or its history no longer matches (non-determinism). Once no
  // order workflow from before the deploy is open and no committed replay history predates it,
  // swap this for deprecatePatch('invoice-after-fulfilment'), and drop that a deploy later.
  if (patched('invoice-after-fulfilment')) await startInvoiceWorkflow(orderId);
}

/**
 * A payment that paid nothing: a further payment of a paid order (a double charge), or one whose
 * amount is not the order's total (the order stays pending for the right payment). Keep it, flag
 * the order, tell a person. Both take the same steps, so histories match either way on replay.
 */
async function flagForRefundReview(orderId: number, event: OrderPaymentEvent): Promise<void> {
  await requestRefundReview({ orderId, eventId: event.eventId });
  const info = workflowInfo();
  const alert: Alert = {
    kind: 'refund_review',
    namespace: info.namespace,
    workflowType: info.workflowType,
    workflowId: info.workflowId,
    runId: info.runId,
    taskQueue: info.taskQueue,
    orderId,
    ...(event.amountMatchesOrder === false
      ? {
          failureType: 'AmountMismatch',
          failureMessage: `order ${orderId} received event ${event.eventId} (payment ${event.paymentId}) for amount ${event.amount}, which is not its total: the payment does not pay the order; review a refund`,
        }
      : {
          failureType: 'DoubleCharge',
          failureMessage: `order ${orderId} was paid again by event ${event.eventId} (payment ${event.paymentId}, amount ${event.amount}): review a refund`,
        }),
    rootCauseType: null,
    rootCauseMessage: null,
    attempts: null,
    failedAt: new Date(Date.now()).toISOString(),
  };
  try {
    await startChild<typeof alertWorkflow>('alertWorkflow', {
      workflowId: refundReviewAlertWorkflowId(orderId, event.eventId),
      args: [alert],
      parentClosePolicy: 'ABANDON',
    });
  } catch (err) {
    // Already raised by an earlier run (for example after a reset): one alert is enough.
    log.warn('refund review alert not started', {
      orderId,
      eventId: event.eventId,
      error: String(err),
    });
  }
}
