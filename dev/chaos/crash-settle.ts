import { setTimeout as delay } from 'node:timers/promises';
import { WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import { orderWorkflowId } from '../../src/shared/order';
import type { Stack } from './crash-stack';
import type { SupervisedProcess } from '../../harness/process/supervisor';

/** How a crash-point row waits: for the hold, for the workflows to settle, for a one-shot's exit. */

// Long enough for the slowest retry after a kill: a mail's 15 s start-to-close timeout, then its
// backoff, then the rest of the order.
export const SETTLE_TIMEOUT_MS = 90_000;
export const HIT_TIMEOUT_MS = 60_000;
// An operator command answers in seconds; this only bounds one that hangs.
const OPERATOR_TIMEOUT_MS = 60_000;

/** The order's latest run closed (or deleted) and nothing runs in the namespace. */
export async function settleOrder(client: Client, orderId: number): Promise<void> {
  await waitFor(`order ${orderId} settled`, async () => {
    try {
      const latest = await client.workflow.getHandle(orderWorkflowId(orderId)).describe();
      if (latest.status.name === 'RUNNING') return undefined;
    } catch (error) {
      if (!(error instanceof WorkflowNotFoundError)) return undefined;
    }
    return (await client.workflow.count('ExecutionStatus = "Running"')).count === 0
      ? true
      : undefined;
  });
}

export async function waitFor<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined) return value;
    } catch {
      // The server answers slowly: ask again.
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${SETTLE_TIMEOUT_MS / 1000} s`);
    await delay(200);
  }
}

export async function waitForHold(stack: Stack, from: number) {
  const deadline = Date.now() + HIT_TIMEOUT_MS;
  while (Date.now() < deadline) {
    const hold = stack.holds[from];
    if (hold) return hold;
    await delay(20);
  }
  return undefined;
}

/** Until the root workflow has closed and nothing runs in the namespace. */
export async function settle(client: Client, root: WorkflowHandle): Promise<void> {
  const deadline = Date.now() + SETTLE_TIMEOUT_MS;
  for (;;) {
    try {
      const description = await root.describe();
      if (description.status.name !== 'RUNNING') {
        const running = await client.workflow.count('ExecutionStatus = "Running"');
        if (running.count === 0) return;
      }
    } catch {
      // Not visible yet, or the server answers slowly: ask again.
    }
    if (Date.now() > deadline) {
      throw new Error(`workflows still running ${SETTLE_TIMEOUT_MS / 1000} s after the kill`);
    }
    await delay(200);
  }
}

/** Starts a one-shot process (an operator command, a migration) and waits for its exit. */
export async function runToExit(
  oneShot: SupervisedProcess,
): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  oneShot.start();
  const exited = oneShot.exited();
  const timer = setTimeout(() => oneShot.kill('SIGKILL'), OPERATOR_TIMEOUT_MS);
  await exited;
  clearTimeout(timer);
  const exit = oneShot.exits.at(-1);
  return { code: exit?.code ?? null, signal: exit?.signal ?? null };
}

/** A control line the hooks print as JSON; anything else the process printed is not one. */
export function controlMessage<T>(line: string): T | undefined {
  try {
    return JSON.parse(line) as T;
  } catch {
    return undefined;
  }
}
