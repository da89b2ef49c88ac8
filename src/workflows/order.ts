import {
  ActivityFailure,
  ApplicationFailure,
  continueAsNew,
  isCancellation,
  log,
  setCurrentDetails,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
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
  type OrderEvent,
  type OrderWorkflowInput,
  type OrderWorkflowResult,
} from '../shared/order';
import { fulfil, settle } from './order-fulfilment';
import { applyRefund, flagForRefundReview } from './order-refunds';
import { steps } from './order-steps';

// The order's entity workflow: its events one at a time, each handled by the module of its kind
// (./order-fulfilment.ts, ./order-refunds.ts; disputes below), its activities in ./order-steps.ts.

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
  const refundWaiting = () => pending.some(isRefundEvent);
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
        processed.push(await settle(input.orderId, event, refundWaiting));
      } else if (event.firstForOrder) {
        const shipped = await fulfil(input.orderId, event, refundWaiting);
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
