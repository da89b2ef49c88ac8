import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import {
  ActivityFailure,
  ApplicationFailure,
  log,
  proxyActivities,
  startChild,
  WorkflowIdReusePolicy,
} from '@temporalio/workflow';
import type { GenerateInvoicePdfResult } from '../activities/invoice-activities';
import type { HeavyActivities } from '../activities/heavy';
import { HEAVY_TASK_QUEUE } from '../shared/constants';
import { FailureType, NON_RETRYABLE_FAILURE_TYPES } from '../shared/errors';
import { invoiceWorkflowId } from '../shared/invoice';

// 5 minutes leave room for a slow disk or a long INVOICE_DELAY_MS; the 10 s heartbeat timeout
// notices a crashed worker sooner. 10 attempts, 10 s doubling to 10 minutes, ride out about an
// hour of database or disk trouble; then it fails, alerts, and `ops retry` runs it again.
const { generateInvoicePdf } = proxyActivities<HeavyActivities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '10 seconds',
  retry: {
    initialInterval: '10 seconds',
    backoffCoefficient: 2,
    maximumInterval: '10 minutes',
    maximumAttempts: 10,
    nonRetryableErrorTypes: [...NON_RETRYABLE_FAILURE_TYPES],
  },
});

export interface InvoiceWorkflowInput {
  orderId: number;
}

export type InvoiceWorkflowResult = GenerateInvoicePdfResult;

/** On `heavy` under `invoice-order-<id>`, so a backlog of invoices never holds up payments. */
export async function invoiceWorkflow(input: InvoiceWorkflowInput): Promise<InvoiceWorkflowResult> {
  try {
    return await generateInvoicePdf({ orderId: input.orderId });
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    throw ApplicationFailure.create({
      type: FailureType.InvoiceFailed,
      message: `the invoice of order ${input.orderId} could not be written: ${err.cause?.message ?? err.message}`,
      details: [{ orderId: input.orderId }],
      nonRetryable: true,
      cause: err,
    });
  }
}

/**
 * Returns once the server has it (ABANDON: it outlives the caller). A second start for the same
 * order is refused by the server and ignored here; only a failed invoice may start again.
 */
export async function startInvoiceWorkflow(orderId: number): Promise<void> {
  const workflowId = invoiceWorkflowId(orderId);
  try {
    await startChild<typeof invoiceWorkflow>('invoiceWorkflow', {
      workflowId,
      taskQueue: HEAVY_TASK_QUEUE,
      args: [{ orderId }],
      parentClosePolicy: 'ABANDON',
      workflowIdReusePolicy: WorkflowIdReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
    });
  } catch (err) {
    // Already there, e.g. when an operator re-runs a fulfilment: one invoice is enough.
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    log.info('invoice workflow already started', { orderId, workflowId });
  }
}
