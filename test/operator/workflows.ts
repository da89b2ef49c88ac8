import { ApplicationFailure, proxyActivities, sleep } from '@temporalio/workflow';
import type { Activities } from '../../src/activities';
import type { OrderWorkflowResult } from '../../src/shared/order';
import type { PaymentWorkflowResult } from '../../src/shared/payment';
import type { StepActivities } from './step-activities';

// Test-only workflows for the operator inbox: shapes of failure and stuck work that the payment
// workflow does not produce, or not within a test's time.

const steps = proxyActivities<StepActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 1 },
});

/**
 * Charges (the card is declined: a non-retryable failure), then runs a compensation that fails
 * too, and fails with the charge's failure as the cause. The last activity that failed is the
 * compensation; the step to retry is the charge.
 */
export async function chargeWorkflow(): Promise<string> {
  await steps.prepare();
  let lastFailure: unknown;
  try {
    return await steps.charge();
  } catch (err) {
    lastFailure = err;
  }
  try {
    await steps.refund();
  } catch {
    // A failed compensation is logged by the worker; the charge stays the failure to report.
  }
  throw ApplicationFailure.create({
    type: 'ChargeFailed',
    message: 'the charge failed twice',
    nonRetryable: true,
    cause: lastFailure instanceof Error ? lastFailure : undefined,
  });
}

/**
 * A payment workflow as every build before issue 24's fix ran a retry: its hand-over (here the
 * charge step) fails, and the run a retry makes completes with nothing handed over.
 */
export async function paymentWorkflow(): Promise<PaymentWorkflowResult> {
  await steps.charge();
  return { paymentId: 1, created: false, orderWorkflowId: null };
}

/**
 * An order workflow whose retried run finds its event finished by another run of the order: its
 * step (the charge) fails, and the run a retry makes processes nothing.
 */
export async function orderWorkflow(): Promise<OrderWorkflowResult> {
  await steps.charge();
  return { orderId: 1, processed: [{ eventId: 'evt_1', outcome: 'already_handled' }] };
}

/** Fails in its own code, after one activity: no activity failure in the cause chain. */
export async function invalidInputWorkflow(): Promise<void> {
  await steps.prepare();
  throw ApplicationFailure.create({
    type: 'InvalidInput',
    message: 'the input is invalid',
    nonRetryable: true,
  });
}

// Server-side retries every 100 ms without end, so attempts pile up within a second.
const { notifyWarehouse } = proxyActivities<Activities>({
  startToCloseTimeout: '5 seconds',
  retry: { initialInterval: '100 milliseconds', backoffCoefficient: 1 },
});

/** Asks the warehouse to ship, retrying by the server's retry policy until it answers. */
export async function impatientShipmentWorkflow(input: { orderId: number }): Promise<void> {
  await notifyWarehouse(input);
}

/** Code that cannot run: a plain Error fails the workflow task, which the server retries forever. */
export async function badDeployWorkflow(): Promise<void> {
  await Promise.resolve();
  throw new Error('bad deploy: this code cannot run');
}

/** Running and healthy: waits on a timer. */
export async function waitingWorkflow(): Promise<void> {
  await sleep('1 hour');
}
