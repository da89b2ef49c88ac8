import {
  type Client,
  type WorkflowExecutionDescription,
  isGrpcServiceError,
  WorkflowNotFoundError,
} from '@temporalio/client';
import type { History } from '@temporalio/common/lib/proto-utils';

/** One event of a workflow history, as the gRPC API returns it (event IDs are Longs). */
export type HistoryEvent = NonNullable<History['events']>[number];

/** The statuses the inbox looks for, as visibility queries spell them. */
export type QueriedStatus = 'Failed' | 'Running';

/** gRPC NOT_FOUND: the server does not know the workflow (never existed, or deleted). */
const GRPC_NOT_FOUND = 5;

/** How many describe calls run at once: quick for an operator, gentle on the server. */
export const DESCRIBE_CONCURRENCY = 8;

/**
 * A visibility query for one status and, optionally, one workflow type. The type is quoted, so
 * any name works and none can widen the query.
 */
export function visibilityQuery(status: QueriedStatus, workflowType?: string): string {
  const clauses = [`ExecutionStatus = '${status}'`];
  if (workflowType !== undefined) clauses.push(`WorkflowType = ${quote(workflowType)}`);
  return clauses.join(' AND ');
}

function quote(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/**
 * Runs that visibility shows in a status, grouped by workflow ID in the order first seen. One
 * workflow ID can have several: a reset leaves the old run Failed beside the new one, so what
 * visibility says about a run is not what the workflow is now; callers check the latest run.
 */
export async function runsByWorkflowId(
  client: Client,
  status: QueriedStatus,
  workflowType?: string,
): Promise<Map<string, string[]>> {
  const runs = new Map<string, string[]>();
  for await (const info of client.workflow.list({ query: visibilityQuery(status, workflowType) })) {
    const known = runs.get(info.workflowId);
    if (known) {
      if (!known.includes(info.runId)) known.push(info.runId);
    } else {
      runs.set(info.workflowId, [info.runId]);
    }
  }
  return runs;
}

/**
 * The latest run of a workflow ID, read from the workflow itself rather than from visibility,
 * so it is never stale. Undefined when the server does not know the ID.
 */
export async function describeLatestRun(
  client: Client,
  workflowId: string,
): Promise<WorkflowExecutionDescription | undefined> {
  try {
    return await client.workflow.getHandle(workflowId).describe();
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** True for the SDK's and the server's ways of saying "no such workflow". */
export function isNotFound(err: unknown): boolean {
  if (err instanceof WorkflowNotFoundError) return true;
  if (!isGrpcServiceError(err)) return false;
  const code: number = err.code;
  return code === GRPC_NOT_FOUND;
}

/** `fn` over `items`, at most `concurrency` at a time, results in the order of `items`. */
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
