import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Client } from '@temporalio/client';
import { orderWorkflowId } from '../../src/shared/order';
import { countOrder, failedOrderRuns } from './crash-counts';
import { createOrder, deliver } from './crash-events';
import { judgeOrder } from './crash-judge';
import type { PointOutcome } from './crash-points';
import { scenarioSpec } from './crash-scenarios';
import { armName, type PointRun } from './crash-matrix';
import { controlMessage, runToExit, settle, settleOrder, waitFor } from './crash-settle';
import { NAMESPACE, type Stack } from './crash-stack';
import type { OperatorHookMessage } from '../../harness/hooks/operator-hook';

/**
 * An order fails (the warehouse answers 400), the operator's command is started with the point
 * armed (`call-<n>`), the CLI freezes after its n-th server call returned and is SIGKILLed there;
 * then the operator runs the command again, as one would after a lost terminal, every workflow
 * settles, and the order is counted against the scenario's expectations.
 */
export async function runOperatorPoint(
  stack: Stack,
  run: PointRun,
  tag: string,
  outcome: PointOutcome,
): Promise<void> {
  const spec = scenarioSpec(run.scenario);
  if (spec.kind !== 'operator' || run.call === undefined) throw new Error(`${run.point}: no call`);
  // `retry all` and `flush` act on every failed workflow: this run's must be the only one.
  if (spec.action !== 'retry') await deleteEveryFailedRun(stack.client);
  const order = await createOrder(stack, tag);
  stack.warehouse.setMode({ kind: 'reject', status: 400 }, 1);
  await settle(stack.client, await deliver(stack, `evt_crash_${tag}_1`, order.id));
  await settleOrder(stack.client, order.id);
  stack.warehouse.setMode({ kind: 'ok' });
  // Both commands find the failure through visibility, which follows the close a moment later.
  await waitFor(`order ${order.id} listed as failed`, async () =>
    (await failedOrderRuns(stack.client, order.id)).length === 1 ? true : undefined,
  );
  const args = {
    retry: ['retry', orderWorkflowId(order.id)],
    'retry all': ['retry', 'all'],
    flush: ['flush', '--yes'],
  }[spec.action];
  const armFile = path.join(stack.armDir, armName(run));
  writeFileSync(armFile, '');
  const interrupted = await operatorCommand(stack, `ops-${tag}-1`, args);
  rmSync(armFile, { force: true });
  const again = await operatorCommand(stack, `ops-${tag}-2`, args);
  await settleOrder(stack.client, order.id);
  outcome.counts = await countOrder(stack, order.id);
  outcome.problems.push(...judgeOrder(stack, spec.expected, outcome.counts, run, undefined));

  const held = interrupted.held;
  outcome.hit = held?.n === run.call && interrupted.signal === 'SIGKILL';
  if (!held) outcome.problems.push(`the CLI made no call ${run.call}`);
  else if (!outcome.hit) outcome.problems.push(`the CLI was not killed after call ${run.call}`);
  const made = (calls: OperatorCall[]) => calls.map((c) => c.method);
  const expectedCalls = spec.calls.slice(0, run.call);
  if (made(interrupted.calls).join() !== expectedCalls.join()) {
    outcome.problems.push(
      `calls ${made(interrupted.calls).join(', ')}, declared ${expectedCalls.join(', ')}`,
    );
  }
  // Killed after its first call, the command changed nothing: run again, it makes every call.
  if (run.call === 1 && !sameCalls(made(again.calls), spec.calls, spec.polls ?? [])) {
    outcome.problems.push(
      `run again: calls ${made(again.calls).join(', ')}, declared ${spec.calls.join(', ')}`,
    );
  }
  outcome.evidence =
    `CLI ${outcome.hit ? 'killed' : 'not killed'} after call ${held?.n ?? '?'} (${held?.method ?? '–'}); ` +
    `run again: exit ${again.code ?? again.signal}, ${again.calls.length} calls`;
}

interface OperatorCall {
  n: number;
  method: string;
}

interface OperatorCommandResult {
  calls: OperatorCall[];
  held: OperatorCall | undefined;
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Runs one operator command to its end, SIGKILLing it when it freezes at the armed call. */
async function operatorCommand(
  stack: Stack,
  name: string,
  args: string[],
): Promise<OperatorCommandResult> {
  const calls: OperatorCall[] = [];
  let held: OperatorCall | undefined;
  const cli = stack.operatorCli(name, args, (line, process) => {
    const message = controlMessage<OperatorHookMessage>(line);
    if (message?.type === 'call') calls.push({ n: message.n, method: message.method });
    if (message?.type === 'hold') {
      held = { n: message.n, method: message.method };
      process.kill('SIGKILL');
    }
  });
  const exit = await runToExit(cli);
  return { calls, held, ...exit };
}

function sameCalls(made: readonly string[], declared: readonly string[], polls: readonly string[]) {
  const first = made.slice(0, declared.length);
  return (
    first.join() === declared.join() && made.slice(declared.length).every((m) => polls.includes(m))
  );
}

/**
 * Deletes every failed run in the namespace (earlier rows', judged already, and the failed runs a
 * retry leaves beside its new run), and waits until visibility lists none: `retry all` and `flush`
 * then see this row's failure alone, and make the calls the scenario declares.
 */
async function deleteEveryFailedRun(client: Client): Promise<void> {
  for await (const execution of client.workflow.list({ query: 'ExecutionStatus = "Failed"' })) {
    try {
      await client.workflowService.deleteWorkflowExecution({
        namespace: NAMESPACE,
        workflowExecution: { workflowId: execution.workflowId, runId: execution.runId },
      });
    } catch (error) {
      // Deleted already (the listing lags the deletion).
      if (!(error instanceof Error && /not found/i.test(error.message))) throw error;
    }
  }
  await waitFor('no failed run listed', async () =>
    (await client.workflow.count('ExecutionStatus = "Failed"')).count === 0 ? true : undefined,
  );
}
