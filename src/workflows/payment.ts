import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities';
import { NON_RETRYABLE_FAILURE_TYPES } from '../shared/errors';
import type { PaymentWorkflowInput, PaymentWorkflowResult } from '../shared/payment';

// Database work: a healthy statement takes milliseconds, so 30 s means the DB is stuck and the
// attempt should be abandoned and retried. Retries continue (unlimited attempts) because a
// recorded payment must not be lost to a database outage; each attempt is idempotent.
const { recordPayment, setShipmentStatus } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    nonRetryableErrorTypes: [...NON_RETRYABLE_FAILURE_TYPES],
  },
});

// Warehouse partner call. The HTTP client gives up after WAREHOUSE_TIMEOUT_MS (10 s by default);
// 20 s leaves room for that plus connection set-up, and stays shorter than the first retry wait.
// Five attempts at 10 s, 30 s, 90 s, 120 s: the seed's #[Tries(5)] + #[Backoff] intent.
const { notifyWarehouse } = proxyActivities<Activities>({
  startToCloseTimeout: '20 seconds',
  retry: {
    maximumAttempts: 5,
    initialInterval: '10 seconds',
    backoffCoefficient: 3,
    maximumInterval: '2 minutes',
    nonRetryableErrorTypes: [...NON_RETRYABLE_FAILURE_TYPES],
  },
});

/**
 * Turns one payment event into exactly one recorded payment and, for the event that recorded
 * it, one shipment request. Started with workflow ID `payment-<event id>`.
 */
export async function paymentWorkflow(input: PaymentWorkflowInput): Promise<PaymentWorkflowResult> {
  const recorded = await recordPayment(input);
  if (!recorded.created) {
    // Another execution (or an earlier life of this one, before a retention-window reset)
    // already recorded this event and owns its follow-up work.
    return { paymentId: recorded.paymentId, created: false, shipmentRequested: false };
  }
  await notifyWarehouse({ orderId: input.orderId });
  await setShipmentStatus({ orderId: input.orderId, status: 'requested' });
  return { paymentId: recorded.paymentId, created: true, shipmentRequested: true };
}
