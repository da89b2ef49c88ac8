import { setTimeout as delay } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import { ApplicationFailure, type ProtoFailure } from '@temporalio/common';
import { decodeOptionalFailureToOptionalError } from '@temporalio/common/lib/internal-non-workflow';
import type { OrderWorkflowResult } from '../shared/order';
import type { PaymentRecordedResult, PaymentWorkflowResult } from '../shared/payment';
import { closeFailure } from './failed-workflows';
import { type FailureSummary, summarizeFailure } from './failures';
import { describeLatestRun, type LatestRun } from './visibility';

export type RetryOutcome =
  | { kind: 'completed' }
  /** Still running at the end of the wait: on the pending step, when there is one. */
  | { kind: 'running'; pending?: string }
  /** It ended otherwise: failed again (with its failure), terminated, timed out… */
  | { kind: 'closed'; status: string; failure?: FailureSummary }
  /** It completed without doing the work: the retry changed nothing. */
  | { kind: 'did-nothing'; reason: string };

export function isProblem(outcome: RetryOutcome): boolean {
  return outcome.kind === 'closed' || outcome.kind === 'did-nothing';
}

export interface AwaitOptions {
  /** How long to wait for the new run to close; 0: look once. */
  waitMs: number;
  pollMs?: number;
}

/**
 * Follows the latest run (a retried export may continue-as-new), not the reset's run ID. A
 * payment must have handed its payment over; an order must have processed its failed event.
 */
export async function awaitRetryOutcome(
  client: Client,
  retried: { workflowId: string; failedRunId: string; failure?: ProtoFailure },
  { waitMs, pollMs = 250 }: AwaitOptions,
): Promise<RetryOutcome> {
  const deadline = Date.now() + waitMs;
  for (;;) {
    const latest = await describeLatestRun(client, retried.workflowId);
    if (!latest) return { kind: 'closed', status: 'DELETED' };
    const status = latest.status.name;
    if (status === 'COMPLETED') return judgeCompleted(client, latest, retried.failure);
    if (status !== 'RUNNING' && status !== 'CONTINUED_AS_NEW') {
      const failure = await closeFailure(client, latest.workflowId, latest.runId);
      return { kind: 'closed', status, ...(failure && { failure: summarizeFailure(failure) }) };
    }
    if (Date.now() >= deadline) return { kind: 'running', ...pendingStep(latest) };
    await delay(pollMs);
  }
}

function pendingStep(latest: LatestRun): { pending?: string } {
  const activity = latest.raw.pendingActivities?.[0];
  const name = activity?.activityType?.name;
  if (!name) return {};
  const lastFailure = activity.lastFailure?.message;
  return {
    pending:
      `${name}, attempt ${activity.attempt ?? 1}` + (lastFailure ? ` (last: ${lastFailure})` : ''),
  };
}

async function judgeCompleted(
  client: Client,
  latest: LatestRun,
  failure: ProtoFailure | undefined,
): Promise<RetryOutcome> {
  let result: unknown;
  try {
    result = await client.workflow.getHandle(latest.workflowId, latest.runId).result();
  } catch {
    // Completed, with a result this process cannot decode (a key it lacks): the server's word.
    return { kind: 'completed' };
  }
  if (latest.type === 'paymentWorkflow') {
    const outcome = result as Partial<PaymentWorkflowResult> | undefined;
    if (outcome?.kind === 'unmatched') {
      return {
        kind: 'did-nothing',
        reason:
          `order ${String(outcome.orderId)} does not exist: the payment is kept as unmatched ` +
          `entry ${String(outcome.unmatchedId)} (npm run ops -- unmatched show ${String(outcome.unmatchedId)})`,
      };
    }
    const payment = outcome as Partial<PaymentRecordedResult> | undefined;
    if (payment?.orderWorkflowId) return { kind: 'completed' };
    return {
      kind: 'did-nothing',
      reason:
        `the new run found payment ${String(payment?.paymentId)} recorded and handed it to no ` +
        "order workflow: an order run had already finished with it (see its order's workflow), " +
        'or the workers run a build whose paymentWorkflow stops at a recorded payment',
    };
  }
  if (latest.type === 'orderWorkflow') {
    const eventId = await failedEventId(client, failure);
    const processed = (result as Partial<OrderWorkflowResult> | undefined)?.processed ?? [];
    // `already_handled`: another chain finished with the event, so this run did not.
    const done = processed.some(
      (p) =>
        (eventId === undefined || p.eventId === eventId) &&
        (p.outcome === 'fulfilled' || p.outcome === 'refund_review'),
    );
    if (!done) {
      return {
        kind: 'did-nothing',
        reason: `the new run completed without processing event ${eventId ?? '(any)'}`,
      };
    }
  }
  return { kind: 'completed' };
}

/** The order event a failed order run failed on: its failure's details name it. */
async function failedEventId(
  client: Client,
  failure: ProtoFailure | undefined,
): Promise<string | undefined> {
  let err: Error | undefined;
  try {
    err = await decodeOptionalFailureToOptionalError(client.options.loadedDataConverter, failure);
  } catch {
    return undefined;
  }
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (!(e instanceof ApplicationFailure)) continue;
    const eventId = (e.details?.[0] as { eventId?: unknown } | undefined)?.eventId;
    if (typeof eventId === 'string') return eventId;
  }
  return undefined;
}
