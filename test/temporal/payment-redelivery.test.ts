import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { ApplicationFailure } from '@temporalio/common';
import { Worker, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { randomUUID } from 'node:crypto';
import type { Activities } from '../../src/activities';
import { PAYMENTS_TASK_QUEUE, paymentWorkflowId } from '../../src/shared/constants';
import { FailureType } from '../../src/shared/errors';
import type { PaymentWorkflowInput } from '../../src/shared/payment';
import { createPaymentStarter } from '../../src/temporal/payment-starter';
import { createTimeSkippingEnv } from '../../harness/temporal/test-env';
import { workflowBundle } from '../support/bundles';

// A provider's redelivery after the event's run has closed, through the real starter against a
// real server: the reuse policy (REJECT_DUPLICATE) must start nothing new, whether the run
// completed or failed. The activities stand in for the database: the first recordPayment of an
// event creates it, any later one finds it, as the UNIQUE provider_event_id makes them do.
let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;

beforeAll(async () => {
  env = await createTimeSkippingEnv();
  bundle = await workflowBundle({ interceptorModules: [] });
});

afterAll(async () => {
  await env?.teardown();
});

/** Delivers the event, waits for its run to close, then delivers it again. */
async function deliverTwice(recordPayment: Activities['recordPayment']) {
  const calls = { recordPayment: 0, handOverToOrder: 0 };
  const worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue: PAYMENTS_TASK_QUEUE,
    workflowBundle: bundle,
    activities: {
      recordPayment: async (input: PaymentWorkflowInput) => {
        calls.recordPayment += 1;
        return recordPayment(input);
      },
      handOverToOrder: async () => {
        calls.handOverToOrder += 1;
        return { handedOver: true };
      },
    },
  });
  const starter = createPaymentStarter(env.client, { startTimeoutMs: 10_000 });
  const input = { eventId: `evt_${randomUUID()}`, orderId: 12, amount: 5400 };
  const workflowId = paymentWorkflowId(input.eventId);
  return worker.runUntil(async () => {
    const first = await starter.start(input);
    const handle = env.client.workflow.getHandle(workflowId);
    const firstRun = await handle.describe();
    await handle.result().catch(() => undefined);
    const closed = await handle.describe();

    const again = await starter.start(input);
    // Give a run that should not exist every chance to start and do its work.
    await env.sleep('1 minute');
    const latest = await env.client.workflow.getHandle(workflowId).describe();
    return { first, again, firstRun, closed, latest, calls };
  });
}

describe('a redelivery after the payment run closed', () => {
  it('starts nothing new when the run completed: no second run, no second record or hand-over', async () => {
    let recorded = false;
    const run = await deliverTwice(async () => {
      const created = !recorded;
      recorded = true;
      return { paymentId: 7, created, firstForOrder: created };
    });

    expect(run.first).toMatchObject({ duplicate: false });
    expect(run.closed.status.name).toBe('COMPLETED');
    expect(run.again).toMatchObject({
      workflowId: run.first.workflowId,
      duplicate: true,
      existing: { known: true, orderId: 12, amount: 5400 },
    });
    // The run under payment-<id> is still the first one, and nothing ran twice.
    expect(run.latest.runId).toBe(run.firstRun.runId);
    expect(run.latest.status.name).toBe('COMPLETED');
    expect(run.calls).toEqual({ recordPayment: 1, handOverToOrder: 1 });
  });

  it('starts nothing new when the run failed: a failed payment is re-run by an operator, not a redelivery', async () => {
    const run = await deliverTwice(async () => {
      throw ApplicationFailure.create({
        // (An unknown order no longer fails the run: it is kept as unmatched.)
        type: FailureType.PaymentEventConflict,
        message: 'event already recorded for order 13',
        nonRetryable: true,
      });
    });

    expect(run.closed.status.name).toBe('FAILED');
    expect(run.again).toMatchObject({ duplicate: true });
    expect(run.latest.runId).toBe(run.firstRun.runId);
    expect(run.latest.status.name).toBe('FAILED');
    expect(run.calls).toEqual({ recordPayment: 1, handOverToOrder: 0 });
  });
});
