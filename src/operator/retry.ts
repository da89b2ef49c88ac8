import { setTimeout as delay } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { ProtoFailure } from '@temporalio/common';
import { FailureType } from '../shared/errors';
import { orderWorkflowId } from '../shared/order';
import { causeChain, summarizeFailure } from './failures';
import { findResetPoint, type ResetPoint } from './reset-point';
import {
  describeLatestRun,
  type LatestRun,
  runsByWorkflowId,
  type UndecodablePayloads,
} from './visibility';

export class RetryRefusedError extends Error {
  constructor(
    readonly workflowId: string,
    /** Status of the latest run, e.g. COMPLETED; undefined when the server does not know the ID. */
    readonly status: string | undefined,
  ) {
    super(
      status === undefined
        ? `${workflowId}: no such workflow${orderHint(workflowId)}`
        : `${workflowId}: its latest run is ${status}; only a workflow whose latest run FAILED can be retried`,
    );
    this.name = 'RetryRefusedError';
  }
}

/** An operator who typed an order's number meant its workflow. */
function orderHint(workflowId: string): string {
  return /^[1-9][0-9]*$/.test(workflowId)
    ? ` (order ${workflowId}'s workflow is ${orderWorkflowId(Number(workflowId))})`
    : '';
}

/** The run could be reset, but no run of its input can succeed; `instead` says what to do. */
export class RetryCannotHelpError extends Error {
  constructor(
    readonly workflowId: string,
    why: string,
    readonly instead: string,
    readonly failure?: ProtoFailure,
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
  identity?: string;
}

export interface RetryResult extends RetryPlan {
  newRunId: string;
}

/**
 * A reset, not a fresh start: a payment reruns both local steps (recordPayment finds its row, the
 * order workflow ignores a seen hand-over). Only a Failed latest run: none completes twice.
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

export interface RetryPlan {
  workflowId: string;
  failedRunId: string;
  resetPoint: ResetPoint;
  failure: ProtoFailure | undefined;
}

async function planRetry(client: Client, latest: LatestRun): Promise<RetryPlan> {
  const { workflowId, runId } = latest;
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  const events = history.events ?? [];
  const failure =
    events.find((e) => e.workflowExecutionFailedEventAttributes)
      ?.workflowExecutionFailedEventAttributes?.failure ?? undefined;
  const hopeless = withoutRemedy(failure);
  if (hopeless) throw new RetryCannotHelpError(workflowId, hopeless.why, hopeless.instead, failure);
  const resetPoint = findResetPoint(events);
  if (!resetPoint) throw new NoResetPointError(workflowId);
  return { workflowId, failedRunId: runId, resetPoint, failure };
}

/**
 * One per failed run: the server answers a seen request ID with the run that reset made, so a
 * lost answer or two operators at once reset it once; a failed reset run is a new run ID.
 */
export function resetRequestId(failedRunId: string): string {
  return `ops-retry-${failedRunId}`;
}

async function applyRetry(
  client: Client,
  plan: RetryPlan,
  options: RetryOptions,
): Promise<RetryResult> {
  const response = await client.workflowService.resetWorkflowExecution({
    namespace: client.options.namespace,
    // The run whose history gave the reset point: event IDs only mean something within one run.
    workflowExecution: { workflowId: plan.workflowId, runId: plan.failedRunId },
    workflowTaskFinishEventId: plan.resetPoint.eventId,
    reason: options.reason,
    requestId: resetRequestId(plan.failedRunId),
    identity: options.identity ?? client.options.identity,
  });
  return { ...plan, newRunId: response.runId };
}

async function resetFailedRun(
  client: Client,
  latest: LatestRun,
  options: RetryOptions,
): Promise<RetryResult> {
  return applyRetry(client, await planRetry(client, latest), options);
}

/**
 * Failures the same input meets on every run (the event ID recorded with another order or
 * amount, an invalid export request): a reset would only fail and alert again.
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
      instead: 'start a corrected export: npm run ops -- batch start [--from ID] [--to ID]',
    };
  }
  return undefined;
}

export type RetryAllOutcome = (
  | { workflowId: string; kind: 'retried'; result: RetryResult }
  | { workflowId: string; kind: 'planned'; plan: RetryPlan }
  /** Visibility still shows an old Failed run, but the workflow is now something else. */
  | { workflowId: string; kind: 'skipped'; status: string }
  /** Failed, but no retry of its input can help (RetryCannotHelpError); left alone. */
  | { workflowId: string; kind: 'refused'; error: RetryCannotHelpError }
  | { workflowId: string; kind: 'error'; error: Error }
) & {
  /** Its memo cannot be decoded: the reset needs no payloads, but its workers may lack the key. */
  undecodable?: { type: string } & UndecodablePayloads;
};

export interface RetryAllOptions extends RetryOptions {
  workflowType?: string;
  rootCause?: string;
  since?: Date;
  dryRun?: boolean;
  resetsPerSecond?: number;
}

/** A reset's run needs a worker at once, so an outage's backlog is let in gradually. */
export const DEFAULT_RESETS_PER_SECOND = 10;

/**
 * A listed ID whose latest run is no longer Failed is skipped: with the per-run request ID, an
 * interrupted `retry all` is safe to run again.
 */
export async function retryAllFailed(
  client: Client,
  options: RetryAllOptions,
): Promise<RetryAllOutcome[]> {
  const outcomes: RetryAllOutcome[] = [];
  const interval = 1000 / (options.resetsPerSecond ?? DEFAULT_RESETS_PER_SECOND);
  let nextResetAt = 0;
  const candidates = await runsByWorkflowId(client, 'Failed', options.workflowType, options.since);
  for (const workflowId of candidates.keys()) {
    try {
      const latest = await describeLatestRun(client, workflowId);
      const undecodable = latest?.undecodable && {
        undecodable: { type: latest.type, ...latest.undecodable },
      };
      if (!latest) {
        outcomes.push({ workflowId, kind: 'skipped', status: 'NOT FOUND' });
        continue;
      }
      if (latest.status.name !== 'FAILED') {
        outcomes.push({ workflowId, kind: 'skipped', status: latest.status.name, ...undecodable });
        continue;
      }
      // The visibility query saw some Failed run since then; the latest must have failed since.
      if (options.since && (latest.closeTime?.getTime() ?? 0) < options.since.getTime()) continue;
      const plan = await planRetry(client, latest);
      if (options.rootCause !== undefined && rootCauseType(plan.failure) !== options.rootCause)
        continue;
      if (options.dryRun) {
        outcomes.push({ workflowId, kind: 'planned', plan, ...undecodable });
        continue;
      }
      await delay(Math.max(0, nextResetAt - Date.now()));
      nextResetAt = Date.now() + interval;
      outcomes.push({
        workflowId,
        kind: 'retried',
        result: await applyRetry(client, plan, options),
        ...undecodable,
      });
    } catch (err) {
      if (err instanceof RetryCannotHelpError) {
        if (options.rootCause === undefined || rootCauseType(err.failure) === options.rootCause)
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

function rootCauseType(failure: ProtoFailure | undefined): string {
  return summarizeFailure(failure).rootCause.type;
}
