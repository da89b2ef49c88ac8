import { setTimeout as delay } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { ProtoFailure } from '@temporalio/common';
import { summarizeFailure, type FailureSummary } from './failures';
import {
  DESCRIBE_CONCURRENCY,
  describeLatestRun,
  isNotFound,
  type LatestRun,
  mapConcurrently,
  runsByWorkflowId,
  type UndecodablePayloads,
} from './visibility';

const CLOSE_EVENT_ONLY = 2;

export interface FailedWorkflow {
  workflowId: string;
  runId: string;
  type: string;
  taskQueue: string;
  orderId: string | undefined;
  failure: FailureSummary;
  failedAt: Date | undefined;
  /** Every Failed run of this workflow ID that visibility knows, the latest among them. */
  failedRunIds: string[];
  /** Its memo cannot be decoded: `orderId` unknown; the failure is still read (not encrypted). */
  undecodable?: UndecodablePayloads;
}

export interface FailedWorkflowFilter {
  workflowType?: string;
  limit?: number;
}

/** A workflow retried successfully keeps its old Failed run in visibility: not listed. */
export async function listFailedWorkflows(
  client: Client,
  filter: FailedWorkflowFilter = {},
): Promise<FailedWorkflow[]> {
  const candidates = [...(await runsByWorkflowId(client, 'Failed', filter.workflowType))];
  const found = await mapConcurrently(candidates, DESCRIBE_CONCURRENCY, async ([id, runIds]) => {
    const latest = await describeLatestRun(client, id);
    if (latest?.status.name !== 'FAILED') return undefined;
    return toFailedWorkflow(latest, await closeFailure(client, id, latest.runId), runIds);
  });
  const failed = found
    .filter((w): w is FailedWorkflow => w !== undefined)
    .sort((a, b) => (b.failedAt?.getTime() ?? 0) - (a.failedAt?.getTime() ?? 0));
  return filter.limit === undefined ? failed : failed.slice(0, filter.limit);
}

/** The failure that closed a run, read from its close event alone (not the whole history). */
export async function closeFailure(
  client: Client,
  workflowId: string,
  runId: string,
): Promise<ProtoFailure | undefined> {
  const response = await client.workflowService.getWorkflowExecutionHistory({
    namespace: client.options.namespace,
    execution: { workflowId, runId },
    historyEventFilterType: CLOSE_EVENT_ONLY,
  });
  const close = response.history?.events?.[0];
  return close?.workflowExecutionFailedEventAttributes?.failure ?? undefined;
}

function toFailedWorkflow(
  latest: LatestRun,
  failure: ProtoFailure | undefined,
  failedRunIds: string[],
): FailedWorkflow {
  const orderId = latest.memo?.orderId;
  return {
    workflowId: latest.workflowId,
    runId: latest.runId,
    type: latest.type,
    taskQueue: latest.taskQueue,
    orderId:
      typeof orderId === 'number' || typeof orderId === 'string' ? String(orderId) : undefined,
    failure: summarizeFailure(failure),
    failedAt: latest.closeTime,
    failedRunIds: failedRunIds.includes(latest.runId)
      ? failedRunIds
      : [...failedRunIds, latest.runId],
    ...(latest.undecodable && { undecodable: latest.undecodable }),
  };
}

export interface FlushResult {
  /** Accepted for deletion, which the server does in the background (see `awaitDeletion`). */
  deleted: FailedWorkflow[];
  skipped: { workflow: FailedWorkflow; reason: string }[];
}

/**
 * Each workflow is checked again first, so a flush never deletes a run retried since listing.
 * Deletion makes the server forget the workflow ID (a later start is new).
 */
export async function flushFailedWorkflows(
  client: Client,
  workflows: readonly FailedWorkflow[],
): Promise<FlushResult> {
  const result: FlushResult = { deleted: [], skipped: [] };
  for (const workflow of workflows) {
    const latest = await describeLatestRun(client, workflow.workflowId);
    if (!latest) {
      result.skipped.push({ workflow, reason: 'already gone' });
      continue;
    }
    if (latest.runId !== workflow.runId || latest.status.name !== 'FAILED') {
      result.skipped.push({
        workflow,
        reason: `changed since it was listed: latest run ${latest.runId} is ${latest.status.name}`,
      });
      continue;
    }
    // Older runs first, the latest last: if this stops midway, the workflow is still listed as
    // failed and a second flush finishes the job.
    const runIds = [...workflow.failedRunIds.filter((id) => id !== latest.runId), latest.runId];
    for (const runId of runIds) await deleteRun(client, workflow.workflowId, runId);
    result.deleted.push(workflow);
  }
  return result;
}

async function deleteRun(client: Client, workflowId: string, runId: string): Promise<void> {
  try {
    await client.workflowService.deleteWorkflowExecution({
      namespace: client.options.namespace,
      workflowExecution: { workflowId, runId },
    });
  } catch (err) {
    // Deleted by someone else in the meantime: the outcome we wanted.
    if (!isNotFound(err)) throw err;
  }
}

export async function awaitDeletion(
  client: Client,
  workflowIds: readonly string[],
  { timeoutMs, intervalMs = 500 }: { timeoutMs: number; intervalMs?: number },
): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  let remaining = [...workflowIds];
  for (;;) {
    const known = await mapConcurrently(remaining, DESCRIBE_CONCURRENCY, async (id) =>
      (await describeLatestRun(client, id)) ? id : undefined,
    );
    remaining = known.filter((id): id is string => id !== undefined);
    if (remaining.length === 0 || Date.now() >= deadline) return remaining;
    await delay(intervalMs);
  }
}
