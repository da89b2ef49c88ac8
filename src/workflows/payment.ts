import { ApplicationFailure, log, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { FailureType, NON_RETRYABLE_FAILURE_TYPES } from '../shared/errors';
import type { PaymentWorkflowInput, PaymentWorkflowResult } from '../shared/payment';
import { RetryBudgets } from '../shared/retry-budget';
import { withRetryBudget, type RetriesExhaustedDetails } from './retry';

// Database work. A healthy statement takes milliseconds and the database itself abandons one
// after 5 s (busy_timeout / statement_timeout), so 10 s means the attempt is lost and the server
// may retry it. Attempts are unlimited: a payment must not be dropped because the database was
// down for an hour; each attempt is idempotent, and `npm run ops -- stuck` shows long outages.
const { recordPayment, setShipmentStatus } = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
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
 * Turns one payment event into exactly one recorded payment and, for the event that recorded
 * it, one shipment request. Started with workflow ID `payment-<event id>`. When the warehouse
 * cannot be reached within its budget, the order is marked `shipment_status = failed` and the
 * workflow fails with FulfilmentFailed, keeping the last cause and the attempt count.
 */
export async function paymentWorkflow(input: PaymentWorkflowInput): Promise<PaymentWorkflowResult> {
  const recorded = await recordPayment(input);
  if (!recorded.created) {
    // Another execution (or an earlier one, before the server forgot this workflow ID)
    // already recorded this event and owns its follow-up work.
    return { paymentId: recorded.paymentId, created: false, shipmentRequested: false };
  }

  try {
    await withRetryBudget(
      'notify-warehouse',
      RetryBudgets.warehouseNotification,
      warehouseCallOptions,
      'notifyWarehouse',
      { orderId: input.orderId },
    );
  } catch (err) {
    if (!(err instanceof ApplicationFailure) || err.type !== FailureType.RetriesExhausted)
      throw err;
    // The seed's failed(): leave the order in a state people can see and act on.
    await setShipmentStatus({ orderId: input.orderId, status: 'failed' });
    const details = err.details?.[0] as RetriesExhaustedDetails;
    log.error('fulfilment failed; order marked shipment_status=failed', {
      orderId: input.orderId,
      eventId: input.eventId,
      ...details,
    });
    throw ApplicationFailure.create({
      type: FailureType.FulfilmentFailed,
      message: `order ${input.orderId} could not be handed to the warehouse: ${err.message}`,
      details: [{ orderId: input.orderId, eventId: input.eventId, ...details }],
      nonRetryable: true,
      cause: err,
    });
  }
  await setShipmentStatus({ orderId: input.orderId, status: 'requested' });
  return { paymentId: recorded.paymentId, created: true, shipmentRequested: true };
}
