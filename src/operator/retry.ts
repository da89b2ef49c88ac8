import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { ProtoFailure } from '@temporalio/common';
import { FailureType } from '../shared/errors';
import { causeChain } from './failures';
import { findResetPoint, type ResetPoint } from './reset-point';
import {
  describeLatestRun,
  type LatestRun,
  runsByWorkflowId,
  type UndecodablePayloads,
} from './visibility';

/** The workflow is not in a state that retry may touch; nothing was changed. */
export class RetryRefusedError extends Error {
  constructor(
    readonly workflowId: string,
    /** Status of the latest run, e.g. COMPLETED; undefined when the server does not know the ID. */
    readonly status: string | undefined,
  ) {
    super(
      status === undefined
        ? `${workflowId}: no such workflow`
        : `${workflowId}: its latest run is ${status}; only a workflow whose latest run FAILED can be retried`,
    );
    this.name = 'RetryRefusedError';
  }
}

/**
 * The failed run could be reset, but no run of its input can do the work: it would fail the same
 * way. Nothing was changed; `instead` says what to do.
 */
export class RetryCannotHelpError extends Error {
  constructor(
    readonly workflowId: string,
    why: string,
    readonly instead: string,
  ) {
    super(`${workflowId}: ${why}`);
    this.name = 'RetryCannotHelpError';
  }
}

/** A failed run could not be reset because its history does not show where it failed. */
export class NoResetPointError extends Error {
  constructor(readonly workflowId: string) {
    super(`${workflowId}: its history has no completed workflow task to reset to`);
    this.name = 'NoResetPointError';
  }
}

export interface RetryOptions {
  /** Recorded on the reset, shown in the Web UI: e.g. "ops retry by alice". */
  reason: string;
  /** Client identity recorded with the reset. */
  identity?: string;
}

export interface RetryResult {
  workflowId: string;
  failedRunId: string;
  newRunId: string;
  resetPoint: ResetPoint;
  /** The failure that closed the failed run: what the new run is judged against. */
  failure: ProtoFailure | undefined;
}

/**
 * Re-runs a failed workflow with the same input by resetting its failed run (not by starting a
 * fresh one): the new run keeps the workflow ID, the input, the signals it received and every
 * result recorded before the reset point (./reset-point.ts), and runs the rest again. An order
 * keeps the payment it was handed and asks the warehouse again. A payment, whose steps are both
 * local activities recorded in its one workflow task, runs both again: recordPayment finds its
 * row, and the hand-over goes out again (the order workflow ignores an event it has seen).
 * Refuses (RetryRefusedError) unless the latest run is Failed, so a completed workflow is never
 * run twice, and (RetryCannotHelpError) when its input cannot succeed.
 */
export async function retryFailedWorkflow(
  client: Client,
  workflowId: string,
  options: RetryOptions,
): Promise<RetryResult> {
  const latest = await describeLatestRun(client, workflowId);
  if (latest?.status.name !== 'FAILED')
    throw new RetryRefusedError(workflowId, latest?.status.name);
  return resetFailedRun(client, latest, options);
}

async function resetFailedRun(
  client: Client,
  latest: LatestRun,
  options: RetryOptions,
): Promise<RetryResult> {
  const { workflowId, runId } = latest;
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  const events = history.events ?? [];
  const failure = events.find((e) => e.workflowExecutionFailedEventAttributes)
    ?.workflowExecutionFailedEventAttributes?.failure;
  const hopeless = withoutRemedy(failure ?? undefined);
  if (hopeless) throw new RetryCannotHelpError(workflowId, hopeless.why, hopeless.instead);
  const resetPoint = findResetPoint(events);
  if (!resetPoint) throw new NoResetPointError(workflowId);
  const response = await client.workflowService.resetWorkflowExecution({
    namespace: client.options.namespace,
    // The run whose history gave the reset point: event IDs only mean something within one run.
    workflowExecution: { workflowId, runId },
    workflowTaskFinishEventId: resetPoint.eventId,
    reason: options.reason,
    // Fresh per call: a deliberate second retry is a second reset, never merged into the first.
    requestId: randomUUID(),
    identity: options.identity ?? client.options.identity,
  });
  return {
    workflowId,
    failedRunId: runId,
    newRunId: response.runId,
    resetPoint,
    failure: failure ?? undefined,
  };
}

/**
 * Failures that the same input meets again on every run, whatever the code and the partners do
 * now: the event's ID is already recorded with another order or amount, or the export request
 * itself is invalid. A reset would only fail again (and alert again).
 */
function withoutRemedy(
  failure: ProtoFailure | undefined,
): { why: string; instead: string } | undefined {
  const types = causeChain(failure).map((f) => f.applicationFailureInfo?.type);
  if (types.includes(FailureType.PaymentEventConflict)) {
    return {
      why: 'its provider event is already recorded with another order or amount (PaymentEventConflict); a retry sends the same event again and fails the same way',
      instead:
        "compare the provider's event with the recorded payment; once settled, clear the failure with npm run ops -- flush",
    };
  }
  if (types.includes(FailureType.InvalidExportRequest)) {
    return {
      why: 'its export request is invalid (InvalidExportRequest); a retry runs the same request',
      instead: 'start a corrected export: npm run batch -- start [--from ID] [--to ID]',
    };
  }
  return undefined;
}

export type RetryAllOutcome = (
  | { workflowId: string; kind: 'retried'; result: RetryResult }
  /** Visibility still shows an old Failed run, but the workflow is now something else. */
  | { workflowId: string; kind: 'skipped'; status: string }
  /** Failed, but no retry of its input can help (RetryCannotHelpError); left alone. */
  | { workflowId: string; kind: 'refused'; error: RetryCannotHelpError }
  | { workflowId: string; kind: 'error'; error: Error }
) & {
  /**
   * Its memo cannot be decoded with the configured key(s). A reset needs no payloads, so the
   * retry goes ahead; the operator is told, since its workers may lack the key as well.
   */
  undecodable?: { type: string } & UndecodablePayloads;
};

/**
 * Retries every workflow (optionally of one type) whose latest run is Failed, one at a time.
 * IDs that visibility lists with a Failed run but whose latest run is not Failed (retried
 * already, completed, running) are skipped and reported. One workflow's error does not stop the
 * others.
 */
export async function retryAllFailed(
  client: Client,
  options: RetryOptions & { workflowType?: string },
): Promise<RetryAllOutcome[]> {
  const outcomes: RetryAllOutcome[] = [];
  for (const workflowId of (
    await runsByWorkflowId(client, 'Failed', options.workflowType)
  ).keys()) {
    try {
      const latest = await describeLatestRun(client, workflowId);
      const undecodable = latest?.undecodable && {
        undecodable: { type: latest.type, ...latest.undecodable },
      };
      if (!latest) {
        outcomes.push({ workflowId, kind: 'skipped', status: 'NOT FOUND' });
      } else if (latest.status.name !== 'FAILED') {
        outcomes.push({ workflowId, kind: 'skipped', status: latest.status.name, ...undecodable });
      } else {
        outcomes.push({
          workflowId,
          kind: 'retried',
          result: await resetFailedRun(client, latest, options),
          ...undecodable,
        });
      }
    } catch (err) {
      if (err instanceof RetryCannotHelpError) {
        outcomes.push({ workflowId, kind: 'refused', error: err });
        continue;
      }
      outcomes.push({
        workflowId,
        kind: 'error',
        error: err instanceof Error ? err : new Error(String(err)),
      });
    }
  }
  return outcomes;
}
