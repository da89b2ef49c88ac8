import { setTimeout as delay } from 'node:timers/promises';
import type { Client } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { createOrdersRepository, type DatabaseHandle } from '../../src/db';
import {
  ALERT_DIGEST_WORKFLOW_TYPE,
  alertDigestWorkflowId,
  digestPostWorkflowId,
} from '../../src/shared/alert';
import { orderWorkflowId } from '../../src/shared/order';
import type { PaymentWorkflowInput } from '../../src/shared/payment';
import type { PaymentStarter, StartedPayment } from '../../src/temporal/payment-starter';
import type { WarehouseSimulator } from '../../harness/partners/warehouse-simulator';

/**
 * The steps the recording scenarios are made of: an order, a payment or a later event started as
 * the webhook starts it, waiting for a workflow's latest run to close, and checking its result.
 */

export interface Run {
  workflowId: string;
  runId: string;
}

export interface Stack {
  env: TestWorkflowEnvironment;
  client: Client;
  db: DatabaseHandle;
  starter: PaymentStarter;
  warehouse: WarehouseSimulator;
}

let orderCounter = 0;
export async function newOrder(stack: Stack): Promise<number> {
  const { order } = await createOrdersRepository(stack.db.db).createWithIdempotencyKey({
    userId: 1,
    customerEmail: `buyer${++orderCounter}@example.com`,
    totalAmount: 5400,
  });
  return order.id;
}

let eventCounter = 0;
/** A fresh event ID (`evt_record_[<kind>_]…`), and its number for the IDs that go with it. */
export function newEventId(kind?: 'refund' | 'dispute'): { eventId: string; n: number } {
  const n = ++eventCounter;
  return { eventId: `evt_record_${kind ? `${kind}_` : ''}${Date.now().toString(36)}_${n}`, n };
}

export function paymentInput(orderId: number): PaymentWorkflowInput {
  return { eventId: newEventId().eventId, orderId, amount: 5400 };
}

/** Starts a payment as the webhook does (same start options) and waits for it to close. */
export async function pay(
  stack: Stack,
  orderId: number,
  input = paymentInput(orderId),
  whileRunning?: () => Promise<void>,
) {
  const started = await stack.starter.start(input);
  if (started.duplicate) throw new Error(`${started.workflowId} was unexpectedly a duplicate`);
  await whileRunning?.();
  const done = await finished(stack.client, started.workflowId);
  if (done.failure)
    throw new Error(`payment ${started.workflowId} did not complete`, { cause: done.failure });
  return done;
}

/** Pays the order and waits until its run has handled the payment. */
export async function payAndSettle(
  stack: Stack,
  orderId: number,
  input = paymentInput(orderId),
): ReturnType<typeof finished> {
  await pay(stack, orderId, input);
  return finished(stack.client, orderWorkflowId(orderId));
}

/**
 * The digest of the failure's cause, once its "opened" post went out (the incident is named by
 * the failed run): a running workflow, whose history so far is what a new build must replay.
 */
export async function openedDigest(stack: Stack, failedRunId: string): Promise<Run> {
  let digest: Run | undefined;
  await until('the failure digest posted its opened alert', async () => {
    for await (const info of stack.client.workflow.list({
      query: `WorkflowType = '${ALERT_DIGEST_WORKFLOW_TYPE}' AND ExecutionStatus = 'Running'`,
    })) {
      const cause = info.workflowId.slice(alertDigestWorkflowId('').length);
      const opened = digestPostWorkflowId(cause, failedRunId, 'opened');
      const post = await stack.client.workflow
        .getHandle(opened)
        .describe()
        .catch(() => undefined);
      if (post?.status.name === 'COMPLETED')
        digest = { workflowId: info.workflowId, runId: info.runId };
    }
    return digest !== undefined;
  });
  return digest!;
}

/** Waits for a refund or dispute intake started as the webhook starts it. */
export async function intake(stack: Stack, started: StartedPayment) {
  if (started.duplicate) throw new Error(`${started.workflowId} was unexpectedly a duplicate`);
  const done = await finished(stack.client, started.workflowId);
  if (done.failure)
    throw new Error(`${started.workflowId} did not complete`, { cause: done.failure });
  return done;
}

/** Waits for the latest run of a workflow to close, and says which run that was. */
export async function finished(client: Client, workflowId: string) {
  const handle = client.workflow.getHandle(workflowId);
  let result: unknown;
  let failure: Error | undefined;
  try {
    result = await handle.result();
  } catch (err) {
    failure = err instanceof Error ? err : new Error(String(err));
  }
  const { runId } = await handle.describe();
  return { run: { workflowId, runId }, result, failure };
}

export function expectFulfilled(orderResult: unknown): void {
  const processed = (orderResult as { processed?: Array<{ outcome: string }> } | undefined)
    ?.processed;
  if (processed?.[0]?.outcome !== 'fulfilled')
    throw new Error(`the order should be fulfilled; its workflow returned ${show(orderResult)}`);
}

export function expectResult(
  actual: unknown,
  expected: Record<string, unknown>,
  what: string,
): void {
  const record = (actual ?? {}) as Record<string, unknown>;
  for (const [key, value] of Object.entries(expected)) {
    if (record[key] !== value)
      throw new Error(`${what}: expected ${key}=${show(value)}, got ${show(actual)}`);
  }
}

export async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`gave up waiting until ${what}`);
    await delay(50);
  }
}

export function show(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}
