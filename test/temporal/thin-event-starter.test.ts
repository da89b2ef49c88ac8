import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import { PAYMENTS_TASK_QUEUE } from '../../src/shared/constants';
import { thinEventWorkflowId, type ThinEventWorkflowInput } from '../../src/shared/thin-event';
import { TemporalUnavailableError } from '../../src/temporal/payment-starter';
import { standInClient } from '../support/stand-in-client';
import { createThinEventStarter } from '../../src/temporal/thin-event-starter';

// The start of a Stripe thin event's fetch against a stand-in client: what it asks the server
// for, and how it reads a redelivery and a failure (test/workflows/thin-event.test.ts runs the
// workflow itself on a real server).

const input: ThinEventWorkflowInput = {
  eventId: 'stripe~evt_thin_1',
  notification: {
    id: 'evt_thin_1',
    object: 'v2.core.event',
    type: 'v1.payment_intent.succeeded',
    livemode: false,
    related_object: { id: 'pi_1', type: 'payment_intent', url: '/v1/payment_intents/pi_1' },
  },
};

describe('createThinEventStarter', () => {
  it('names the fetch thin-<event id>', () => {
    expect(thinEventWorkflowId('stripe~evt_1')).toBe('thin-stripe~evt_1');
  });

  it('starts one fetch per event, refusing a second run under its ID even after it closed', async () => {
    const { client, calls } = standInClient();
    const before = Date.now();
    const started = await createThinEventStarter(client, { startTimeoutMs: 7000 }).start(input);
    expect(started).toStrictEqual({ workflowId: 'thin-stripe~evt_thin_1', duplicate: false });
    expect(calls.starts).toEqual([
      [
        'thinEventWorkflow',
        {
          workflowId: 'thin-stripe~evt_thin_1',
          taskQueue: PAYMENTS_TASK_QUEUE,
          args: [input],
          workflowIdConflictPolicy: 'FAIL',
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          // What an operator reads in the Web UI's list without opening the run.
          memo: { eventId: 'stripe~evt_thin_1', type: 'v1.payment_intent.succeeded' },
        },
      ],
    ]);
    // The start is bounded by the configured timeout from now, so the webhook answers in time.
    const [deadline] = calls.deadlines;
    expect(deadline).toBeGreaterThanOrEqual(before + 7000);
    expect(deadline).toBeLessThanOrEqual(Date.now() + 7000);
  });

  it('reads a redelivery (the run exists or existed) as a duplicate, not a failure', async () => {
    const { client } = standInClient({
      start: () =>
        Promise.reject(
          new WorkflowExecutionAlreadyStartedError(
            'exists',
            'thin-stripe~evt_thin_1',
            'thinEventWorkflow',
          ),
        ),
    });
    await expect(
      createThinEventStarter(client, { startTimeoutMs: 1000 }).start(input),
    ).resolves.toStrictEqual({ workflowId: 'thin-stripe~evt_thin_1', duplicate: true });
  });

  it('reports any other failure as Temporal unavailable, with its cause (the webhook’s 503)', async () => {
    const failure = new Error('14 UNAVAILABLE: connection refused');
    const { client } = standInClient({ start: () => Promise.reject(failure) });
    const error: unknown = await createThinEventStarter(client, { startTimeoutMs: 1000 })
      .start(input)
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(TemporalUnavailableError);
    expect((error as TemporalUnavailableError).cause).toBe(failure);
  });
});
