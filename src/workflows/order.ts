import {
  ActivityFailure,
  ApplicationFailure,
  continueAsNew,
  isCancellation,
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
import { FailureType } from '../shared/errors';
import {
  orderStateQuery,
  paymentRecordedSignal,
  type FulfilmentFailedDetails,
  type OrderPaymentEvent,
  type OrderWorkflowInput,
  type OrderWorkflowResult,
} from '../shared/order';
import { RetryPolicies } from '../shared/retry-policies';
import { OrderIdSearchAttribute } from '../shared/search-attributes';
import type { alertWorkflow } from './alert';
import { startInvoiceWorkflow } from './invoice';
import { localStep } from './local-step';
import { RetryBudgets } from './legacy/retry-budget';
import { withRetryBudget, type RetriesExhaustedDetails } from './legacy/retry-budget-loop';

// One proxy per activity, each with its own Web UI summary (metadata, not matched on replay),
// and the retry preset of its kind of call (src/shared/retry-policies.ts says why each).
//
// The database steps take milliseconds, so they run as local activities (./local-step.ts): in
// the worker, inside the workflow task that follows the previous step, each recorded as a marker
// that names its activity type. Each saves an activity task and a workflow task. Same presets.
const summaries = {
  setShipmentStatus: 'Record the shipment status on the order',
  requestRefundReview: 'Flag the order for a refund review (double charge or wrong amount)',
  awardLoyaltyPoints: 'Award the loyalty points for the order',
} as const;
const localSteps = {
  setShipmentStatus: localStep('setShipmentStatus', {
    ...RetryPolicies.databaseStep,
    summary: summaries.setShipmentStatus,
  }),
  requestRefundReview: localStep('requestRefundReview', {
    ...RetryPolicies.databaseStep,
    summary: summaries.requestRefundReview,
  }),
  awardLoyaltyPoints: localStep('awardLoyaltyPoints', {
    ...RetryPolicies.databaseStep,
    summary: summaries.awardLoyaltyPoints,
  }),
};
// LEGACY: the same steps as activities, for runs started before patch 'local-order-steps'.
const activitySteps: typeof localSteps = {
  setShipmentStatus: proxyActivities<Activities>({
    ...RetryPolicies.databaseStep,
    summary: summaries.setShipmentStatus,
  }).setShipmentStatus,
  requestRefundReview: proxyActivities<Activities>({
    ...RetryPolicies.databaseStep,
    summary: summaries.requestRefundReview,
  }).requestRefundReview,
  awardLoyaltyPoints: proxyActivities<Activities>({
    ...RetryPolicies.databaseStep,
    summary: summaries.awardLoyaltyPoints,
  }).awardLoyaltyPoints,
};

/**
 * How this run does its steps, decided once when it starts (patch 'local-order-steps'): local
 * activities and none of the older patches' markers, or the code of the deploy it started under.
 */
interface Plan {
  steps: typeof localSteps;
  /** The run started before 'local-order-steps': the older patches still decide. */
  legacy: boolean;
}
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

/**
 * The entity workflow of one order (ID `order-<id>`): every effect on the order runs here, one
 * at a time. Started (or fed, when running) by signal-with-start from the payment workflows;
 * it completes once nothing is left to do, and the next payment for the order starts a new run.
 * The first payment fulfils the order; any further one is a double charge, flagged for review.
 */
export async function orderWorkflow(input: OrderWorkflowInput): Promise<OrderWorkflowResult> {
  // Patch 'local-order-steps' (2026-12-01): the database steps as local activities (markers
  // instead of scheduled activities: new commands), the invoice started beside the confirmation
  // mail instead of after the loyalty points, and, for runs that start on this code, none
  // of the older patches' markers and search-attribute upserts (each patch() records a marker and
  // upserts TemporalChangeVersion): such a run takes every newer path, and its OrderId is set by
  // the signal-with-start that starts it. A run started before the deploy replays and finishes
  // on the code it started with. It can go once no order run from before the deploy is open
  // (hours at most; check first, see docs/deploys.md), together with the older patches.
  const plan: Plan = patched('local-order-steps')
    ? { steps: localSteps, legacy: false }
    : { steps: activitySteps, legacy: true };
  // Patch 'search-attributes-v1' (2026-11-29): tag the run with its order, so the Web UI and
  // `temporal workflow list --query 'OrderId = 12'` find it. The upsert is a new command: a run
  // started before the deploy must not issue it when a new worker replays it. It can go once no
  // order run started before the deploy is open (runs last hours at most, so from 2026-12-06 if
  // deployed by 2026-11-29; check first, see docs/deploys.md): deprecatePatch, then delete.
  if (plan.legacy && patched('search-attributes-v1')) {
    upsertSearchAttributes([{ key: OrderIdSearchAttribute, value: input.orderId }]);
  } else if (
    !plan.legacy &&
    workflowInfo().typedSearchAttributes.get(OrderIdSearchAttribute) === undefined
  ) {
    // Started without it (by a worker of the previous deploy, during a rolling deploy): tag it
    // here. Decided on what the run was started with, so a replay decides the same.
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

  // Events whose work failed for good. The run goes on with every other event (a double charge
  // that arrived while the fulfilment retried is still flagged), then fails with the first, so
  // the failure is visible as Failed in the Web UI, alerted once, and retryable with `ops retry`.
  const failures: ApplicationFailure[] = [];

  while (pending.length > 0) {
    const event = pending.shift()!;
    current = event.eventId;
    try {
      if (event.firstForOrder) {
        await fulfil(plan, input.orderId, event);
        processed.push({ eventId: event.eventId, outcome: 'fulfilled' });
      } else {
        await flagForRefundReview(plan, input.orderId, event);
        processed.push({ eventId: event.eventId, outcome: 'refund_review' });
      }
    } catch (err) {
      if (isCancellation(err)) throw err;
      failures.push(eventFailure(input.orderId, event, err));
      processed.push({ eventId: event.eventId, outcome: 'failed' });
    }
    current = null;
    // Bounded history for an order that keeps receiving events. Not once an event failed: the
    // failure must stay on this run, where `ops retry` resets to the step that failed.
    if (workflowInfo().continueAsNewSuggested && pending.length > 0 && failures.length === 0) {
      // The next run starts with this run's search attributes (the server carries them over),
      // so it is tagged with its order from the start.
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
function eventFailure(orderId: number, event: OrderPaymentEvent, err: unknown): ApplicationFailure {
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
 * gives up (compensating then), then the confirmation mail and the loyalty points.
 */
async function fulfil(plan: Plan, orderId: number, event: OrderPaymentEvent): Promise<void> {
  // Patch 'warehouse-retry-policy' (2026-12-01): one activity whose attempts the server
  // schedules replaces the workflow-side loop of one activity per attempt. A run that started
  // its warehouse step before the deploy replays and finishes on the loop (src/workflows/legacy).
  // Runs that start on 'local-order-steps' code always take the new path (and record no marker).
  if (plan.legacy && !patched('warehouse-retry-policy')) return legacyFulfil(plan, orderId, event);
  try {
    await notifyWarehouse({ orderId });
  } catch (err) {
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
    await compensateFailedFulfilment(plan, orderId, details);
    throw ApplicationFailure.create({
      type: FailureType.FulfilmentFailed,
      message: `order ${orderId} could not be handed to the warehouse (${details.reason}): ${details.lastFailureMessage}`,
      details: [details],
      nonRetryable: true,
      cause: err,
    });
  }
  await afterWarehouseNotified(plan, orderId);
}

/** The seed's failed(): leave the order in a state people can see and act on. */
async function compensateFailedFulfilment(
  plan: Plan,
  orderId: number,
  details: FulfilmentFailedDetails,
): Promise<void> {
  await plan.steps.setShipmentStatus({ orderId, status: 'failed' });
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
async function afterWarehouseNotified(plan: Plan, orderId: number): Promise<void> {
  await plan.steps.setShipmentStatus({ orderId, status: 'requested' });
  if (!plan.legacy) {
    // 'local-order-steps': the invoice (an abandoned child on `heavy`) starts as soon as the
    // warehouse took the order, beside the mail, so the workflow task its start costs runs while
    // the mail is sent instead of after the loyalty points (one round trip less before the run
    // completes). The child is started before the run may complete: the server drops an
    // abandoned child whose start is still pending when its parent closes.
    const invoice = startInvoiceWorkflow(orderId);
    // Awaited below; handled now, so a failed start is not an unhandled rejection meanwhile.
    invoice.catch(() => undefined);
    try {
      // Both run only here, one at a time per order: the mail's send-then-stamp guard and the
      // ledger's unique key never race with another run for the same order.
      await sendOrderConfirmation({ orderId });
      await plan.steps.awardLoyaltyPoints({ orderId });
    } finally {
      await invoice;
    }
    return;
  }
  await sendOrderConfirmation({ orderId });
  await plan.steps.awardLoyaltyPoints({ orderId });
  // Patch 'invoice-after-fulfilment' (2026-11-29): starting the invoice (an abandoned child on
  // task queue `heavy`) is a new command. An order workflow that ran this step before the deploy
  // must not issue it on replay, or its history no longer matches (non-determinism). Once no
  // order workflow from before the deploy is open and no committed replay history predates it,
  // swap this for deprecatePatch('invoice-after-fulfilment'), and drop that a deploy later.
  if (!plan.legacy || patched('invoice-after-fulfilment')) await startInvoiceWorkflow(orderId);
}

/**
 * A payment that paid nothing: a further payment of a paid order (a double charge), or one whose
 * amount is not the order's total (the order stays pending for the right payment). Keep it, flag
 * the order, tell a person. Both take the same steps, so histories match either way on replay.
 */
async function flagForRefundReview(
  plan: Plan,
  orderId: number,
  event: OrderPaymentEvent,
): Promise<void> {
  await plan.steps.requestRefundReview({ orderId, eventId: event.eventId });
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
      // One alert per extra payment, ever: a hand-over retried after this run closed feeds the
      // event to a new run, which must not raise the alert a second time.
      workflowIdReusePolicy: 'REJECT_DUPLICATE',
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

/** LEGACY (see ./legacy/retry-budget-loop.ts): the fulfilment of runs started before 2026-12-01. */
async function legacyFulfil(plan: Plan, orderId: number, event: OrderPaymentEvent): Promise<void> {
  try {
    await withRetryBudget(
      'notify-warehouse',
      RetryBudgets.warehouseNotification,
      { startToCloseTimeout: '8 seconds', heartbeatTimeout: '3 seconds' },
      'notifyWarehouse',
      { orderId },
    );
  } catch (err) {
    if (!(err instanceof ApplicationFailure) || err.type !== FailureType.RetriesExhausted)
      throw err;
    const budget = err.details?.[0] as RetriesExhaustedDetails;
    const details: FulfilmentFailedDetails = { orderId, eventId: event.eventId, ...budget };
    await compensateFailedFulfilment(plan, orderId, details);
    throw ApplicationFailure.create({
      type: FailureType.FulfilmentFailed,
      message: `order ${orderId} could not be handed to the warehouse: ${err.message}`,
      details: [details],
      nonRetryable: true,
      cause: err,
    });
  }
  await afterWarehouseNotified(plan, orderId);
}
