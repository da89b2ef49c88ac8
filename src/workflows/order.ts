import {
  ActivityFailure,
  ApplicationFailure,
  continueAsNew,
  isCancellation,
  log,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  startChild,
  workflowInfo,
} from '@temporalio/workflow';
import type { Activities } from '../activities';
import {
  refundReviewAlertWorkflowId,
  returnReviewAlertWorkflowId,
  type Alert,
} from '../shared/alert';
import { FailureType } from '../shared/errors';
import {
  disputeRecordedSignal,
  isDisputeEvent,
  isRefundEvent,
  isSettlementEvent,
  orderSettledSignal,
  orderStateQuery,
  paymentRecordedSignal,
  refundRecordedSignal,
  warehouseAttemptFailedSignal,
  type FulfilmentFailedDetails,
  type OrderEvent,
  type OrderPaymentEvent,
  type OrderSettlementEvent,
  type OrderWorkflowInput,
  type OrderWorkflowResult,
} from '../shared/order';
import { RetryPolicies } from '../shared/retry-policies';
import type { alertWorkflow } from './alert';
import { startInvoiceWorkflow } from './invoice';
import { localStep } from './local-step';
import { unlessPartnerPaused } from './partner-hold';
import { countCompensation, countFulfilment, countShipment } from './order-metrics';

// One proxy per activity, each with its own Web UI summary (metadata, not matched on replay),
// and the retry preset of its kind of call (src/shared/retry-policies.ts says why each).
//
// The database steps take milliseconds, so they run as local activities (./local-step.ts): in
// the worker, inside the workflow task that follows the previous step, each recorded as a marker
// that names its activity type. Each saves an activity task and a workflow task. Same presets.
const steps = {
  setShipmentStatus: localStep('setShipmentStatus', {
    ...RetryPolicies.databaseStep,
    summary: 'Record the shipment status on the order',
  }),
  requestRefundReview: localStep('requestRefundReview', {
    ...RetryPolicies.databaseStep,
    summary: 'Flag the order for a refund review (double charge or wrong amount)',
  }),
  awardLoyaltyPoints: localStep('awardLoyaltyPoints', {
    ...RetryPolicies.databaseStep,
    summary: 'Award the loyalty points for the order',
  }),
  orderEventHandledBy: localStep('orderEventHandledBy', {
    ...RetryPolicies.databaseStep,
    summary: 'Read whether an order run already finished with the event',
  }),
  markOrderEventHandled: localStep('markOrderEventHandled', {
    ...RetryPolicies.databaseStep,
    summary: 'Record that this order run finished with the event',
  }),
  applyRefunds: localStep('applyRefunds', {
    ...RetryPolicies.databaseStep,
    summary: "Add up the order's refunds and record the total",
  }),
  requestReturnReview: localStep('requestReturnReview', {
    ...RetryPolicies.databaseStep,
    summary: 'Flag the refunded order for a return review (the warehouse had it)',
  }),
  reverseLoyaltyPoints: localStep('reverseLoyaltyPoints', {
    ...RetryPolicies.databaseStep,
    summary: 'Take back the points of the fully refunded order',
  }),
  applyDisputes: localStep('applyDisputes', {
    ...RetryPolicies.databaseStep,
    summary: "Work out where the order's disputes stand and record it",
  }),
};
// The cancel races the warehouse's packing: a few quick attempts, then a person (the preset says
// why it gives up sooner than the shipment request).
const { cancelShipment } = proxyActivities<Activities>({
  ...RetryPolicies.warehouseCancellation,
  summary: "Cancel the order's shipment at the warehouse (refunded in full before it shipped)",
});
const { sendOrderConfirmation } = proxyActivities<Activities>({
  ...RetryPolicies.confirmationMail,
  summary: 'Send the order confirmation mail',
});
// Tries(5), Backoff([10, 30, 120]), retryUntil(+30 min): one activity, its attempts scheduled by
// the server, so the Web UI shows it pending with its attempt, last failure and next retry.
const { notifyWarehouse } = proxyActivities<Activities>({
  ...RetryPolicies.warehouseNotification,
  summary: 'Ask the warehouse to ship the order',
});

// PINNED (the workers' default for every workflow, src/workers/deployment.ts; not set here: the
// server refuses a workflow's own behaviour from an unversioned worker, as the time-skipping
// tests run): a run finishes on the build that started it, so a deploy never makes this code
// replay a history another build wrote, and a change here needs no patched() (docs/deploys.md).
// A run is short: it completes once no event is pending, and its retry policies bound its waits
// (the warehouse's 30 minutes, the mail's 2 hours; a day only through a database outage). An
// order parked in the warehouse backoff during a deploy keeps its retries on the old build's
// workers, which stop once the drain check shows no open run; the next payment for the order
// starts a new run on the current build. A run continues-as-new only while events are queued,
// and server 1.29 keeps that next run on the same build (no upgrade on continue-as-new), so a
// busy order moves to the new build when its queue empties, not before.

/**
 * The entity workflow of one order (ID `order-<id>`): every effect on the order runs here, one
 * at a time. Started (or fed, when running) by signal-with-start from the payment workflows;
 * it completes once nothing is left to do, and the next payment for the order starts a new run.
 * The first payment fulfils the order; any further one is a double charge, flagged for review.
 */
export async function orderWorkflow(input: OrderWorkflowInput): Promise<OrderWorkflowResult> {
  const pending: OrderEvent[] = [...(input.pending ?? [])];
  // Handover activities are at-least-once: the same event may be signalled twice.
  const seen = new Set<string>(input.seenEventIds ?? pending.map((e) => e.eventId));
  const processed: OrderWorkflowResult['processed'] = [];
  let current: string | null = null;

  const take = (event: OrderEvent) => {
    if (seen.has(event.eventId)) return;
    seen.add(event.eventId);
    pending.push(event);
  };
  setHandler(paymentRecordedSignal, take);
  setHandler(refundRecordedSignal, take);
  setHandler(disputeRecordedSignal, take);
  setHandler(orderSettledSignal, take);
  // The Web UI's current details while the server retries the warehouse call (the workflow
  // cannot see those attempts; the activity tells it). Metadata only: no command, no replay check.
  setHandler(
    warehouseAttemptFailedSignal,
    ({ attempt, maximumAttempts, nextRetryDelayMs, lastFailure }) => {
      const of = maximumAttempts > 0 ? ` of ${maximumAttempts}` : '';
      const next = Math.round(nextRetryDelayMs / 1000);
      setCurrentDetails(
        `warehouse attempt ${attempt}${of}, next in ${next} s, last: ${lastFailure}`,
      );
    },
  );
  setHandler(orderStateQuery, () => ({
    orderId: input.orderId,
    current,
    pending: pending.map((e) => e.eventId),
    processed,
  }));

  // Events whose work failed for good. The run goes on with every other event (a double charge
  // that arrived while the fulfilment retried is still flagged), then fails with the first, so
  // the failure is visible as Failed in the Web UI, alerted once, and retryable with `ops retry`.
  const failures: ApplicationFailure[] = [];

  // The chain's first run ID names this workflow's work in the database: a reset (`ops retry`)
  // keeps it, so the reset run redoes what its chain failed; continue-as-new keeps it too.
  const chain = workflowInfo().firstExecutionRunId;

  while (pending.length > 0) {
    const event = pending.shift()!;
    current = event.eventId;
    const ref = eventRef(input.orderId, event);
    const handled = await steps.orderEventHandledBy(ref);
    if (handled.chain !== null && handled.chain !== chain) {
      // Another run finished with it (done, or failed and waiting for `ops retry`), and this
      // run got it from a hand-over repeated after that: nothing is missing that it may do.
      processed.push({ eventId: event.eventId, outcome: 'already_handled' });
      current = null;
      continue;
    }
    try {
      // Disputes recorded before this payment waited for it (it claimed them): applied first,
      // so the order shows them even when its fulfilment fails.
      if (!('kind' in event) && event.disputed) await applyDisputes(input.orderId);
      if (isRefundEvent(event)) {
        await applyRefund(input.orderId);
        processed.push({ eventId: event.eventId, outcome: 'refund' });
      } else if (isDisputeEvent(event)) {
        await applyDisputes(input.orderId);
        processed.push({ eventId: event.eventId, outcome: 'dispute' });
      } else if (isSettlementEvent(event)) {
        processed.push(await settle(input.orderId, event));
      } else if (event.firstForOrder) {
        const shipped = await fulfil(input.orderId, event);
        processed.push({
          eventId: event.eventId,
          outcome: shipped ? 'fulfilled' : 'refunded_before_shipment',
        });
      } else {
        await flagForRefundReview(input.orderId, event);
        processed.push({ eventId: event.eventId, outcome: 'refund_review' });
      }
    } catch (err) {
      if (isCancellation(err)) throw err;
      failures.push(eventFailure(input.orderId, event, err));
      processed.push({ eventId: event.eventId, outcome: 'failed' });
    }
    // Before the run may fail with it: a hand-over repeated after this finds the event handled
    // and starts no second run (which would call the warehouse and alert again).
    await steps.markOrderEventHandled({ ...ref, chain });
    current = null;
    // Bounded history for an order that keeps receiving events. Not once an event failed: the
    // failure must stay on this run, where `ops retry` resets to the step that failed.
    if (workflowInfo().continueAsNewSuggested && pending.length > 0 && failures.length === 0) {
      // The next run starts with this run's search attributes (the server carries them over),
      // so it is tagged with its order from the start. It stays on this run's build: server
      // 1.29 keeps a pinned run's continue-as-new on its version (see the note above).
      await continueAsNew<typeof orderWorkflow>({
        orderId: input.orderId,
        pending,
        seenEventIds: [...seen],
      });
    }
  }
  const [firstFailure] = failures;
  if (firstFailure) throw firstFailure;
  return { orderId: input.orderId, processed };
}

/**
 * The failure an event's work ended with, as the workflow will report it. Activity failures
 * reach here only after their retry policy gave up; a bug in this code (a plain Error) is not
 * caught here and fails the workflow task instead, to be retried once fixed.
 */
function eventFailure(orderId: number, event: OrderEvent, err: unknown): ApplicationFailure {
  if (err instanceof ApplicationFailure) return err;
  if (err instanceof ActivityFailure) {
    return ApplicationFailure.create({
      type: FailureType.OrderEventFailed,
      message: `order ${orderId}: event ${event.eventId} could not be processed: ${err.cause?.message ?? err.message}`,
      details: [{ orderId, eventId: event.eventId }],
      nonRetryable: true,
      cause: err,
    });
  }
  throw err;
}

/**
 * Fulfils a paid order: the warehouse notification, retried by the server until its policy
 * gives up (compensating then), then the confirmation mail and the loyalty points. Not an order
 * whose refunds already add up to what paid it (a refund can be recorded before its payment is
 * handed over): nothing goes to the warehouse. Returns whether the warehouse took the order.
 */
async function fulfil(
  orderId: number,
  event: Pick<OrderPaymentEvent, 'eventId' | 'paidAt'>,
): Promise<boolean> {
  const refunds = await steps.applyRefunds({ orderId });
  // A cancelled shipment stays cancelled, whatever the refunds add up to later: never re-requested.
  if (refunds.fullyRefunded || refunds.shipmentStatus === 'cancelled') {
    log.info('order refunded in full before it was shipped: nothing goes to the warehouse', {
      orderId,
      eventId: event.eventId,
      refundedAmount: refunds.refundedAmount,
    });
    countFulfilment('refunded_before_shipment');
    return false;
  }
  try {
    await unlessPartnerPaused('warehouse', (release) => notifyWarehouse({ orderId, ...release }));
    setCurrentDetails('');
  } catch (err) {
    setCurrentDetails('');
    if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
    const cause = err.cause;
    const details: FulfilmentFailedDetails = {
      orderId,
      eventId: event.eventId,
      step: 'notifyWarehouse',
      reason: giveUpReason(err),
      attempts: attemptsOf(cause),
      lastFailureType:
        cause instanceof ApplicationFailure ? (cause.type ?? undefined) : cause?.name,
      lastFailureMessage: cause?.message ?? err.message,
    };
    await compensateFailedFulfilment(orderId, details);
    throw ApplicationFailure.create({
      type: FailureType.FulfilmentFailed,
      message: `order ${orderId} could not be handed to the warehouse (${details.reason}): ${details.lastFailureMessage}`,
      details: [details],
      nonRetryable: true,
      cause: err,
    });
  }
  countShipment(event);
  await afterWarehouseNotified(orderId);
  return true;
}

/**
 * A refund was recorded: the order's refunded total is added up again from every refund event
 * (amounts decide full or partial, whatever order they came in). Refunded in full, the order's
 * points are taken back, and a shipment the warehouse took is cancelled there (or, too late for
 * that, flagged for a return review with one alert). Before the warehouse had it, the fulfilment
 * reads the same total and ships nothing.
 */
async function applyRefund(orderId: number): Promise<void> {
  const refunds = await steps.applyRefunds({ orderId });
  if (!refunds.fullyRefunded) return;
  // Once a person reviews a return (an earlier cancel came too late or failed), the workflow
  // does not cancel behind their back: a repeated full refund changes nothing there.
  if (refunds.shipmentStatus === 'requested' && !refunds.returnReviewRequested) {
    await stopShipment(orderId, refunds.refundedAmount);
  }
  await steps.reverseLoyaltyPoints({ orderId });
}

/**
 * Cancels the shipment of an order refunded in full. Cancelled: `shipment_status = cancelled`,
 * nothing for a person. The warehouse shipped it already, or the cancel failed for good (its
 * retries used up, or a 4xx): the parcel may be on its way, so a person reviews a return, told
 * by one alert (its workflow ID is the order's: a second refund, a reset or a retry adds none).
 * While an operator has the warehouse paused, the cancel is held like the shipment request.
 */
async function stopShipment(orderId: number, refundedAmount: number): Promise<void> {
  let why: { failureType: string; failureMessage: string };
  try {
    const receipt = await unlessPartnerPaused('warehouse', (release) =>
      cancelShipment({ orderId, ...release }),
    );
    if (receipt.outcome === 'cancelled') {
      await steps.setShipmentStatus({ orderId, status: 'cancelled' });
      return;
    }
    why = {
      failureType: 'RefundedAfterShipment',
      failureMessage: `order ${orderId} was refunded in full (${refundedAmount}) after the warehouse shipped it: review a return`,
    };
  } catch (err) {
    if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
    why = {
      failureType: 'ShipmentCancelFailed',
      failureMessage: `order ${orderId} was refunded in full (${refundedAmount}) but its shipment could not be cancelled (${err.cause?.message ?? err.message}): check with the warehouse, review a return`,
    };
  }
  await steps.requestReturnReview({ orderId });
  await raiseOrderAlert(returnReviewAlertWorkflowId(orderId), {
    kind: 'return_review',
    orderId,
    ...why,
  });
}

/** The row an event's handling is recorded on: its own, or for a settlement its order's. */
function eventRef(orderId: number, event: OrderEvent) {
  if (!('kind' in event)) return { eventId: event.eventId };
  if (event.kind === 'settlement') return { eventId: event.eventId, kind: event.kind, orderId };
  return { eventId: event.eventId, kind: event.kind };
}

/**
 * A dispute was recorded for the order (or one recorded before its payment was claimed by it):
 * where the order's disputes stand is worked out again from every dispute event, so opened and
 * closed events converge whatever order they came in. The opened alert is the dispute
 * workflow's, one per dispute.
 */
async function applyDisputes(orderId: number): Promise<void> {
  const outcome = await steps.applyDisputes({ orderId });
  log.info('dispute status recorded on the order', { orderId, ...outcome });
}

/**
 * An operator settled the pending order with the payments it had (`ops settle`): it is fulfilled
 * as a first payment would have, once (the settlement's event ID is one per order, and the
 * database's pending-to-paid claim let only the settlement or a payment pay it). Who, when and
 * why stay in the Web UI: the current details while it is fulfilled, the log and the result.
 */
async function settle(
  orderId: number,
  event: OrderSettlementEvent,
): Promise<OrderWorkflowResult['processed'][number]> {
  const settlement = {
    settledBy: event.settledBy,
    reason: event.reason,
    settledAt: event.settledAt,
  };
  log.info('order settled by an operator: fulfilling it', {
    orderId,
    eventId: event.eventId,
    paymentIds: event.paymentIds,
    ...settlement,
  });
  setCurrentDetails(`settled by ${event.settledBy} at ${event.settledAt}: ${event.reason}`);
  const shipped = await fulfil(orderId, {
    eventId: event.eventId,
    paidAt: Date.parse(event.settledAt),
  });
  return {
    eventId: event.eventId,
    outcome: shipped ? 'fulfilled' : 'refunded_before_shipment',
    settlement,
  };
}

/** The seed's failed(): leave the order in a state people can see and act on. */
async function compensateFailedFulfilment(
  orderId: number,
  details: FulfilmentFailedDetails,
): Promise<void> {
  await steps.setShipmentStatus({ orderId, status: 'failed' });
  countCompensation(details);
  log.error('fulfilment failed; order marked shipment_status=failed', { ...details });
}

/** Why the server stopped retrying, in the words of the seed's attributes. */
function giveUpReason(err: ActivityFailure): FulfilmentFailedDetails['reason'] {
  switch (err.retryState) {
    case 'MAXIMUM_ATTEMPTS_REACHED':
      return 'max_attempts';
    case 'TIMEOUT':
      return 'deadline';
    case 'NON_RETRYABLE_FAILURE':
      return 'non_retryable';
    default:
      return 'other';
  }
}

/** The attempt number the activity put in its failure's details, when it could. */
function attemptsOf(cause: Error | undefined): number | undefined {
  if (!(cause instanceof ApplicationFailure)) return undefined;
  const first = cause.details?.[0] as { attempts?: unknown } | undefined;
  return typeof first?.attempts === 'number' ? first.attempts : undefined;
}

/** The steps after the warehouse took the order. */
async function afterWarehouseNotified(orderId: number): Promise<void> {
  await steps.setShipmentStatus({ orderId, status: 'requested' });
  // The invoice (an abandoned child on `heavy`) starts as soon as the warehouse took the order,
  // beside the mail, so the workflow task its start costs runs while the mail is sent instead of
  // after the loyalty points (one round trip less before the run completes). The child is
  // started before the run may complete: the server drops an abandoned child whose start is
  // still pending when its parent closes.
  const invoice = startInvoiceWorkflow(orderId);
  // Awaited below; handled now, so a failed start is not an unhandled rejection meanwhile.
  invoice.catch(() => undefined);
  try {
    // Both run only here, one at a time per order: the mail's send-then-stamp guard and the
    // ledger's unique key never race with another run for the same order.
    await sendOrderConfirmation({ orderId });
    await steps.awardLoyaltyPoints({ orderId });
  } finally {
    await invoice;
  }
}

/**
 * A payment that paid nothing: a further payment of a paid order (a double charge), or one whose
 * amount is not the order's total (the order stays pending for the right payment). Keep it, flag
 * the order, tell a person. Both take the same steps, so histories match either way on replay.
 */
async function flagForRefundReview(orderId: number, event: OrderPaymentEvent): Promise<void> {
  await steps.requestRefundReview({ orderId, eventId: event.eventId });
  const alert = {
    kind: 'refund_review' as const,
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
  };
  await raiseOrderAlert(refundReviewAlertWorkflowId(orderId, event.eventId), alert);
}

/**
 * Starts an alert about the order, once ever under its workflow ID: a run that meets the same
 * fact again (a retried hand-over, a reset) must not raise it a second time.
 */
async function raiseOrderAlert(
  workflowId: string,
  fields: Pick<Alert, 'kind' | 'orderId' | 'failureType' | 'failureMessage'> & Partial<Alert>,
): Promise<void> {
  const info = workflowInfo();
  const alert: Alert = {
    namespace: info.namespace,
    workflowType: info.workflowType,
    workflowId: info.workflowId,
    runId: info.runId,
    taskQueue: info.taskQueue,
    rootCauseType: null,
    rootCauseMessage: null,
    attempts: null,
    failedAt: new Date(Date.now()).toISOString(),
    ...fields,
  };
  try {
    await startChild<typeof alertWorkflow>('alertWorkflow', {
      workflowId,
      args: [alert],
      parentClosePolicy: 'ABANDON',
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
    });
  } catch (err) {
    // Already raised by an earlier run (for example after a reset): one alert is enough.
    log.warn('order alert not started', { orderId: alert.orderId, workflowId, error: String(err) });
  }
}
