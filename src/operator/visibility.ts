import { type Client, isGrpcServiceError, WorkflowNotFoundError } from '@temporalio/client';
import { executionInfoFromRaw } from '@temporalio/client/lib/helpers';
import type { Replace } from '@temporalio/common/lib/type-helpers';
import type { temporal } from '@temporalio/proto';
import type { History } from '@temporalio/common/lib/proto-utils';

/** One event of a workflow history, as the gRPC API returns it (event IDs are Longs). */
export type HistoryEvent = NonNullable<History['events']>[number];

export type QueriedStatus = 'Failed' | 'Running';

/** gRPC NOT_FOUND: the server does not know the workflow (never existed, or deleted). */
const GRPC_NOT_FOUND = 5;

/** How many describe calls run at once: quick for an operator, gentle on the server. */
export const DESCRIBE_CONCURRENCY = 8;

/** The type is quoted, so any name works and none can widen the query. */
export function visibilityQuery(
  status: QueriedStatus,
  workflowType?: string,
  closedSince?: Date,
): string {
  const clauses = [`ExecutionStatus = '${status}'`];
  if (workflowType !== undefined) clauses.push(`WorkflowType = ${quote(workflowType)}`);
  if (closedSince !== undefined) clauses.push(`CloseTime >= '${closedSince.toISOString()}'`);
  return clauses.join(' AND ');
}

function quote(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/**
 * Not `client.workflow.list()`: it decodes every memo and aborts the whole listing on one
 * written with a key this process lacks. A reset leaves the old run Failed: check the latest.
 */
export async function runsByWorkflowId(
  client: Client,
  status: QueriedStatus,
  workflowType?: string,
  closedSince?: Date,
): Promise<Map<string, string[]>> {
  const runs = new Map<string, string[]>();
  let nextPageToken: Uint8Array | undefined;
  do {
    const response = await client.workflowService.listWorkflowExecutions({
      namespace: client.options.namespace,
      query: visibilityQuery(status, workflowType, closedSince),
      nextPageToken,
    });
    for (const { execution } of response.executions ?? []) {
      const workflowId = execution?.workflowId;
      const runId = execution?.runId;
      if (!workflowId || !runId) continue;
      const known = runs.get(workflowId);
      if (known) {
        if (!known.includes(runId)) known.push(runId);
      } else {
        runs.set(workflowId, [runId]);
      }
    }
    nextPageToken = response.nextPageToken?.length ? response.nextPageToken : undefined;
  } while (nextPageToken);
  return runs;
}

export interface UndecodablePayloads {
  keyId: string | undefined;
  message: string;
}

/** A memo written with a key this process lacks does not fail the describe: see `undecodable`. */
export type LatestRun = Replace<
  Awaited<ReturnType<typeof executionInfoFromRaw>>,
  { raw: temporal.api.workflowservice.v1.IDescribeWorkflowExecutionResponse }
> & { undecodable?: UndecodablePayloads };

/** Read from the workflow, not visibility, so never stale. Undefined: unknown ID. */
export async function describeLatestRun(
  client: Client,
  workflowId: string,
): Promise<LatestRun | undefined> {
  const namespace = client.options.namespace;
  let raw;
  try {
    raw = await client.workflowService.describeWorkflowExecution({
      namespace,
      execution: { workflowId },
    });
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  const info = raw.workflowExecutionInfo ?? {};
  try {
    return await executionInfoFromRaw(info, client.options.loadedDataConverter, raw, namespace);
  } catch (err) {
    // Decoding is local work: whatever failed here is the payloads, not the server.
    const undecodable = undecodablePayloads(err);
    const withoutMemo = { ...info, memo: undefined };
    return {
      ...(await executionInfoFromRaw(
        withoutMemo,
        client.options.loadedDataConverter,
        raw,
        namespace,
      )),
      undecodable,
    };
  }
}

function undecodablePayloads(err: unknown): UndecodablePayloads {
  const text = (err as { message?: unknown } | null)?.message;
  const message = typeof text === 'string' ? text : String(err);
  // src/codec/codec.ts: `payload encrypted with unknown key "<id>"`.
  const keyId = /unknown key "([^"]*)"/.exec(message)?.[1];
  return { keyId, message };
}

export function describeUndecodable(
  workflow: { workflowId: string; type: string },
  undecodable: UndecodablePayloads,
): string {
  const why =
    undecodable.keyId !== undefined
      ? `they were encrypted with key "${undecodable.keyId}", which PAYLOAD_ENCRYPTION_KEY does not hold`
      : undecodable.message;
  return (
    `${workflow.workflowId} (${workflow.type}): its payloads cannot be decoded with the ` +
    `configured key(s): ${why}`
  );
}

export function isNotFound(err: unknown): boolean {
  if (err instanceof WorkflowNotFoundError) return true;
  if (!isGrpcServiceError(err)) return false;
  const code: number = err.code;
  return code === GRPC_NOT_FOUND;
}

export async function mapConcurrently<T, R>(
  items: readonly T[],
  concurrency: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(concurrency, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index] as T);
    }
  });
  await Promise.all(lanes);
  return results;
}
