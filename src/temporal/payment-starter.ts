import {
  type Client,
  WorkflowExecutionAlreadyStartedError,
  WorkflowNotFoundError,
} from '@temporalio/client';
import type { SearchAttributePair } from '@temporalio/common';
import { PAYMENTS_TASK_QUEUE, paymentWorkflowId } from '../shared/constants';
import type { PaymentWorkflowInput } from '../shared/payment';
import {
  disputeWorkflowId,
  refundWorkflowId,
  type DisputeEvent,
  type RefundEvent,
} from '../shared/payment-events';
import { OrderIdSearchAttribute, PaymentEventIdSearchAttribute } from '../shared/search-attributes';
import type {
  disputeWorkflow,
  paymentWorkflow,
  refundWorkflow,
  thinEventWorkflow,
} from '../workflows';
import { grpcStatus } from './grpc-status';

export type StartedPayment =
  | { workflowId: string; duplicate: false }
  /** An execution with this ID already existed (running or closed): nothing new started. */
  | { workflowId: string; duplicate: true; existing: ExistingPayment };

/**
 * What the execution already under the event's workflow ID was started with, so the webhook can
 * tell a provider's retry (same body) from a different body under a reused event ID.
 */
export type ExistingPayment =
  /** From its memo; a field is undefined when the memo lacks it (runs started before it had it). */
  | { known: true; orderId: number | undefined; amount: number | undefined }
  /** It could not be read: `reason` says why, for the log; the delivery is queued either way. */
  | { known: false; reason: string; cause: unknown };

/** Starts payment workflows; the HTTP layer depends on this port, not on the Temporal client. */
export interface PaymentStarter {
  start(input: PaymentWorkflowInput): Promise<StartedPayment>;
  /**
   * Starts `refund-<event id>` with the same policies: a redelivery is a duplicate, Temporal
   * unavailable is a TemporalUnavailableError (503). `existing` of a duplicate carries no
   * comparison (a refund's memo is not read back).
   */
  startRefund(event: RefundEvent): Promise<StartedPayment>;
  /** Starts `dispute-<event id>`, as startRefund. */
  startDispute(event: DisputeEvent): Promise<StartedPayment>;
}

/**
 * Temporal could not be reached in time, or refused the start: the caller should answer 503 so
 * the provider retries. `configurationProblem` is set when the refusal is not an outage but a
 * set-up or configuration error that retrying will not cure (an unregistered search attribute,
 * an unknown namespace, rejected credentials): it names the fix, for an error-level log line.
 */
export class TemporalUnavailableError extends Error {
  readonly configurationProblem: string | undefined;
  constructor(cause: unknown) {
    super('Temporal is unavailable', { cause });
    this.name = 'TemporalUnavailableError';
    this.configurationProblem = configurationProblem(cause);
  }
}

const INVALID_ARGUMENT = 3;
const NOT_FOUND = 5;
const PERMISSION_DENIED = 7;
const UNAUTHENTICATED = 16;

/** What a refused start says about the set-up, when it is not a transient failure. */
function configurationProblem(error: unknown): string | undefined {
  // The server's words are on the gRPC status the client wraps ("Failed to start Workflow").
  const status = grpcStatus(error);
  if (!status) return undefined;
  const { code, details: text } = status;
  switch (code) {
    case INVALID_ARGUMENT:
      return /search attribute/i.test(text)
        ? `the Temporal namespace lacks a search attribute the start sets (${text}): run npm run temporal:setup`
        : `Temporal refused the start as invalid (${text})`;
    case NOT_FOUND:
      return `the Temporal namespace does not exist (${text}): run npm run temporal:setup or set TEMPORAL_NAMESPACE`;
    case PERMISSION_DENIED:
    case UNAUTHENTICATED:
      return `Temporal refused the credentials (${text}): check TEMPORAL_API_KEY or the client certificate (npm run ops -- doctor)`;
  }
  return undefined;
}

/**
 * Starts `payment-<event id>` with the policies that make redelivery harmless:
 * - conflict policy FAIL: a delivery while the first is still running is rejected by the server
 *   (atomically, even for concurrent deliveries), which we report as a duplicate;
 * - reuse policy REJECT_DUPLICATE: a closed execution, Completed or Failed, is never re-run by a
 *   provider's redelivery. Re-running a failed payment is an operator's decision (see the
 *   operator CLI), not a side effect of the provider retrying its webhook.
 * Beyond the namespace's retention window the server forgets the ID; the UNIQUE constraint on
 * payments.provider_event_id then stops the second execution from doing anything.
 */
export function createPaymentStarter(
  client: Client,
  options: { startTimeoutMs: number },
): PaymentStarter {
  // Concurrent duplicates of one event (a provider's retry storm) share one describe call: the
  // memo they read is fixed at start, so one answer is every one's answer.
  const describing = new Map<string, Promise<ExistingPayment>>();
  const existingPayment = (workflowId: string, deadline: number) => {
    let pending = describing.get(workflowId);
    if (!pending) {
      pending = readExistingPayment(client, workflowId, deadline).finally(() =>
        describing.delete(workflowId),
      );
      describing.set(workflowId, pending);
    }
    return pending;
  };

  /**
   * A refund's or dispute's intake, with the payment's policies. A duplicate's `existing` carries
   * no comparison: their memo is not read back.
   */
  async function startIntake<T extends 'refundWorkflow' | 'disputeWorkflow'>(
    workflowType: T,
    workflowId: string,
    event: RefundEvent | DisputeEvent,
  ): Promise<StartedPayment> {
    const started = await startOnce(client, Date.now() + options.startTimeoutMs, workflowType, {
      workflowId,
      args: [event] as Parameters<IntakeWorkflows[T]>,
      memo: { eventId: event.eventId, paymentRef: event.paymentRef, amount: event.amount },
      typedSearchAttributes:
        event.orderId === undefined ? [] : [{ key: OrderIdSearchAttribute, value: event.orderId }],
    });
    if (started) return { workflowId, duplicate: false };
    return {
      workflowId,
      duplicate: true,
      existing: { known: true, orderId: event.orderId, amount: undefined },
    };
  }

  return {
    async start(input) {
      const workflowId = paymentWorkflowId(input.eventId);
      // One budget for the start and, for a duplicate, the describe: TEMPORAL_START_TIMEOUT_MS
      // stays the longest a delivery waits for Temporal.
      const deadline = Date.now() + options.startTimeoutMs;
      const started = await startOnce(client, deadline, 'paymentWorkflow', {
        workflowId,
        args: [input],
        // Shown in workflow lists (Web UI, operator CLI) without reading the history, and read
        // back on a duplicate delivery to compare its body with the first one's.
        memo: { orderId: input.orderId, eventId: input.eventId, amount: input.amount },
        // Filters for the Web UI and the CLI (`OrderId = 12`), set at start: no workflow code
        // changes, so no patch. The server must know them (src/shared/search-attributes.ts).
        typedSearchAttributes: [
          { key: OrderIdSearchAttribute, value: input.orderId },
          { key: PaymentEventIdSearchAttribute, value: input.eventId },
        ],
      });
      if (started) return { workflowId, duplicate: false };
      // Only on the duplicate path is the existing run read: a first delivery costs one call.
      return { workflowId, duplicate: true, existing: await existingPayment(workflowId, deadline) };
    },

    startRefund: (event) => startIntake('refundWorkflow', refundWorkflowId(event.eventId), event),
    startDispute: (event) =>
      startIntake('disputeWorkflow', disputeWorkflowId(event.eventId), event),
  };
}

type IntakeWorkflows = {
  paymentWorkflow: typeof paymentWorkflow;
  refundWorkflow: typeof refundWorkflow;
  disputeWorkflow: typeof disputeWorkflow;
  thinEventWorkflow: typeof thinEventWorkflow;
};

/**
 * Starts an event's workflow under its event's workflow ID, at most once: conflict policy FAIL
 * and reuse policy REJECT_DUPLICATE (see createPaymentStarter). False: a run with that ID exists
 * or existed, and nothing was started. Any other failure is on our side of the wire (server
 * down, deadline, overload): the event is not durably queued, and the provider must deliver it
 * again (TemporalUnavailableError, a 503).
 */
export async function startOnce<T extends keyof IntakeWorkflows>(
  client: Client,
  deadline: number,
  workflowType: T,
  options: {
    workflowId: string;
    args: Parameters<IntakeWorkflows[T]>;
    memo: Record<string, unknown>;
    typedSearchAttributes?: SearchAttributePair[];
  },
): Promise<boolean> {
  try {
    await client.connection.withDeadline(deadline, () =>
      client.workflow.start<IntakeWorkflows[T]>(workflowType, {
        ...options,
        taskQueue: PAYMENTS_TASK_QUEUE,
        workflowIdConflictPolicy: 'FAIL',
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
      }),
    );
    return true;
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return false;
    throw new TemporalUnavailableError(err);
  }
}

/**
 * Reads the order ID and amount the existing run was started with from its memo (decoded by
 * the client's data converter, so also when payloads are encrypted). Never throws: the event is
 * durably queued whatever happens here, so a failed read only means no comparison.
 */
async function readExistingPayment(
  client: Client,
  workflowId: string,
  deadline: number,
): Promise<ExistingPayment> {
  try {
    const { memo } = await client.connection.withDeadline(deadline, () =>
      client.workflow.getHandle(workflowId).describe(),
    );
    return { known: true, orderId: safeInteger(memo?.orderId), amount: safeInteger(memo?.amount) };
  } catch (err) {
    const reason =
      err instanceof WorkflowNotFoundError
        ? 'the existing run is gone (deleted after the retention period, or flushed)'
        : 'the existing run could not be described';
    return { known: false, reason, cause: err };
  }
}

function safeInteger(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) ? value : undefined;
}
