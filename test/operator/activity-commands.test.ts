import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { devServerExecutable } from '../../harness/temporal/provision';
import { createDevServerEnv } from '../../harness/temporal/test-env';
import {
  eventually,
  startPayment,
  startPaymentStack,
  warehouseRequestsFor,
  type PaymentStack,
} from './helpers';

// docs/operator.md, "The retrying activity, with the Temporal CLI": what an operator does with
// `temporal activity pause|update-options|reset` while the warehouse is down, done once against
// the dev server with the provisioned CLI (the same binary that runs the server), exactly as the
// docs write it.

let env: TestWorkflowEnvironment;
let stack: PaymentStack;
let cliPath: string;

beforeAll(async () => {
  const executable = await devServerExecutable();
  if (executable.type !== 'existing-path') {
    throw new Error(
      'the Temporal CLI was not provisioned as a file (see docs/temporal-servers.md)',
    );
  }
  cliPath = executable.path;
  env = await createDevServerEnv();
  stack = await startPaymentStack(env);
}, 120_000);

afterAll(async () => {
  await stack?.close();
  await env?.teardown();
});

/** Runs `temporal <args>` against the test's dev server; fails with its stderr. */
async function temporal(...args: string[]): Promise<string> {
  try {
    const { stdout } = await promisify(execFile)(
      cliPath,
      [...args, '--address', env.address, '--namespace', env.namespace ?? 'default'],
      { timeout: 30_000 },
    );
    return stdout;
  } catch (error) {
    const { stderr } = error as { stderr?: string };
    throw new Error(`temporal ${args.join(' ')} failed: ${stderr ?? String(error)}`);
  }
}

/** What `temporal workflow describe -o json` says about the order's one pending activity. */
interface PendingActivity {
  activityId: string;
  activityType: { name: string };
  state: string;
  attempt: number;
  maximumAttempts: number;
  paused?: boolean;
  lastFailure?: { message: string };
  nextAttemptScheduleTime?: string;
}

async function pendingActivity(workflowId: string): Promise<PendingActivity> {
  const described = JSON.parse(
    await temporal('workflow', 'describe', '--workflow-id', workflowId, '--output', 'json'),
  ) as { pendingActivities?: PendingActivity[] };
  const [pending, ...others] = described.pendingActivities ?? [];
  if (!pending || others.length > 0) {
    throw new Error(`expected one pending activity, got ${described.pendingActivities?.length}`);
  }
  return pending;
}

describe('the retrying warehouse activity, operated with the Temporal CLI', () => {
  it('pauses it, raises its attempts, and resets it so that it runs now instead of after its 30 s wait', async () => {
    stack.warehouse.setMode({ kind: 'unavailable', status: 503 });
    const { orderId, workflowId } = await startPayment(env, stack);

    // Attempt 1 failed at once, attempt 2 ten seconds later: the server now waits 30 s.
    const waiting = await eventually(
      async () => {
        const pending = await pendingActivity(workflowId);
        expect(pending).toMatchObject({
          activityType: { name: 'notifyWarehouse' },
          state: 'PENDING_ACTIVITY_STATE_SCHEDULED',
          attempt: 3,
          maximumAttempts: 5,
          lastFailure: { message: expect.stringContaining('503') },
        });
        return pending;
      },
      { timeoutMs: 30_000, intervalMs: 500 },
    );
    // The SDK numbers a workflow's activities, local ones included, in the order it schedules
    // them: the warehouse call follows the order run's check of its event and its read of refunds.
    expect(waiting.activityId).toBe('3');
    const nextAttemptAt = Date.parse(waiting.nextAttemptScheduleTime!);
    expect(nextAttemptAt - Date.now()).toBeGreaterThan(20_000);
    expect(warehouseRequestsFor(stack, orderId)).toHaveLength(2);

    await temporal('activity', 'pause', '--workflow-id', workflowId, '--activity-id', '3');
    await temporal(
      'activity',
      'update-options',
      '--workflow-id',
      workflowId,
      '--activity-id',
      '3',
      '--retry-maximum-attempts',
      '10',
    );
    const paused = await pendingActivity(workflowId);
    expect(paused).toMatchObject({
      state: 'PENDING_ACTIVITY_STATE_PAUSED',
      paused: true,
      maximumAttempts: 10,
    });

    // The warehouse is back: retry now rather than in half a minute.
    stack.warehouse.setMode({ kind: 'ok' });
    const resetAt = Date.now();
    await temporal('activity', 'reset', '--workflow-id', workflowId, '--activity-id', '3');
    await env.client.workflow.getHandle(workflowId).result();

    const requests = warehouseRequestsFor(stack, orderId);
    expect(requests.map((r) => r.status)).toEqual([503, 503, 201]);
    const shippedAt = Date.parse(requests[2]!.at);
    expect(shippedAt).toBeGreaterThanOrEqual(resetAt - 1_000);
    expect(shippedAt).toBeLessThan(nextAttemptAt - 10_000);
    expect(await stack.orders.findById(orderId)).toMatchObject({ shipmentStatus: 'requested' });
  }, 90_000);
});
