import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { WorkflowBundleWithSourceMap } from '@temporalio/worker';
import {
  createStripeApiActivities,
  createStripeClient,
} from '../../src/activities/stripe-api-activities';
import type { StripeThinNotification, ThinEventResult } from '../../src/shared/thin-event';
import { thinEventWorkflowId } from '../../src/shared/thin-event';
import type { thinEventWorkflow } from '../../src/workflows';
import {
  startStripeApiDouble,
  type StripeApiDouble,
} from '../../harness/partners/stripe-api-double';
import { bundledWorker, workflowBundle } from '../support/bundles';
import { createTimeSkippingEnv } from '../../harness/temporal/test-env';
import {
  recordingPaymentStarter,
  recordingUnmatched,
  type RecordingPaymentStarter,
  type RecordingUnmatched,
} from '../support/webhook';

// A Stripe thin event through its workflow in the time-skipping server: the real activities,
// Stripe's official client, and a local double of the API endpoints it fetches from. Retry
// waits of minutes pass in milliseconds.

const API_KEY = 'sk_test_thin_event_double_key';

const stripeError = (status: number, message: string) => ({
  status,
  body: { error: { type: 'invalid_request_error', message } },
});

let env: TestWorkflowEnvironment;
let bundle: WorkflowBundleWithSourceMap;
let api: StripeApiDouble;
let starter: RecordingPaymentStarter;
let inbox: RecordingUnmatched;

beforeAll(async () => {
  bundle = await workflowBundle();
});
beforeEach(async () => {
  env = await createTimeSkippingEnv();
  api = await startStripeApiDouble();
  starter = recordingPaymentStarter();
  inbox = recordingUnmatched();
});
afterEach(async () => {
  await api?.close();
  await env?.teardown();
});

function notification(
  type: string,
  related: { id: string; type: string; url: string },
): StripeThinNotification {
  return {
    id: `evt_${randomUUID()}`,
    object: 'v2.core.event',
    type,
    livemode: false,
    related_object: related,
  };
}

/** The thin event of a succeeded PaymentIntent, `id`. */
const intentSucceeded = (id = 'pi_thin1') =>
  notification('v1.payment_intent.succeeded', {
    id,
    type: 'payment_intent',
    url: `/v1/payment_intents/${id}`,
  });

async function run(
  thin: StripeThinNotification,
  options: { withKey?: boolean } = {},
): Promise<ThinEventResult> {
  const taskQueue = `thin-${randomUUID()}`;
  const activities = createStripeApiActivities({
    stripe:
      options.withKey === false
        ? undefined
        : createStripeClient({ apiKey: API_KEY, baseUrl: api.url }),
    starter,
    unmatched: inbox,
    shopCurrency: 'jpy',
  });
  const worker = await bundledWorker(env, bundle, taskQueue, activities);
  const eventId = `stripe~${thin.id}`;
  return worker.runUntil(
    env.client.workflow.execute<typeof thinEventWorkflow>('thinEventWorkflow', {
      workflowId: thinEventWorkflowId(eventId),
      taskQueue,
      args: [{ eventId, notification: thin }],
      workflowExecutionTimeout: '7 days',
    }),
  );
}

const paymentIntent = {
  id: 'pi_thin1',
  object: 'payment_intent',
  amount: 5400,
  amount_received: 5400,
  currency: 'jpy',
  status: 'succeeded',
  livemode: false,
  metadata: { order_id: '42' },
};

it('fetches the PaymentIntent with the API key and starts its payment under the event’s key', async () => {
  api.answers = [{ status: 200, body: paymentIntent }];
  const thin = intentSucceeded();
  const result = await run(thin);
  expect(result).toEqual({
    kind: 'started',
    workflowId: `payment-stripe~${thin.id}`,
    duplicate: false,
  });
  expect(api.requests).toEqual([
    { path: '/v1/payment_intents/pi_thin1', authorization: `Bearer ${API_KEY}` },
  ]);
  expect(starter.starts).toEqual([
    {
      eventId: `stripe~${thin.id}`,
      orderId: 42,
      amount: 5400,
      currency: 'jpy',
      paymentRef: 'stripe~pi_thin1',
    },
  ]);
  expect(inbox.entries).toEqual([]);
});

it('retries the fetch through the activity’s RetryPolicy while Stripe fails, then goes on', async () => {
  api.answers = [
    { status: 500, body: { error: { type: 'api_error', message: 'down' } } },
    stripeError(429, 'slow down'),
    { status: 200, body: paymentIntent },
  ];
  const thin = intentSucceeded();
  expect(await run(thin)).toMatchObject({ kind: 'started' });
  // Three attempts, each one request: the client itself retries nothing.
  expect(api.requests).toHaveLength(3);
  expect(starter.starts).toHaveLength(1);
});

it('backs off while Stripe stays down: doubling waits from a second, capped at ten minutes', async () => {
  // Twelve failures, then an answer. The waits between the attempts are 1, 2, 4 … 512 s, then
  // 600 s twice: 2,223 s of (skipped) time before the fetch completes. Stripe is not hammered
  // during an outage, nor left for hours after it ends.
  const down = { status: 500, body: { error: { type: 'api_error', message: 'down' } } };
  api.answers = [...Array.from({ length: 12 }, () => down), { status: 200, body: paymentIntent }];
  const thin = intentSucceeded();
  expect(await run(thin)).toMatchObject({ kind: 'started' });
  expect(api.requests).toHaveLength(13);
  const history = await env.client.workflow
    .getHandle(thinEventWorkflowId(`stripe~${thin.id}`))
    .fetchHistory();
  const events = history.events ?? [];
  const fetched = events.find((e) => e.activityTaskCompletedEventAttributes);
  const waited = Number(fetched?.eventTime?.seconds) - Number(events[0]?.eventTime?.seconds);
  expect(waited).toBeGreaterThanOrEqual(2223);
  expect(waited).toBeLessThan(2223 + 60);
});

it('keeps an object Stripe refuses (404) as unmatched at once, without retrying', async () => {
  api.answers = [stripeError(404, 'No such payment_intent')];
  const thin = intentSucceeded('pi_gone');
  const result = await run(thin);
  expect(result).toEqual({ kind: 'unmatched', unmatchedId: 1, reason: 'thin_unresolved' });
  expect(api.requests).toHaveLength(1);
  expect(inbox.entries).toEqual([
    {
      reason: 'thin_unresolved',
      provider: 'stripe',
      eventId: `stripe~${thin.id}`,
      payload: expect.objectContaining({ object: thin }) as unknown,
    },
  ]);
  expect(starter.starts).toEqual([]);
});

it('keeps the event as unmatched when the worker has no STRIPE_API_KEY', async () => {
  const thin = intentSucceeded();
  expect(await run(thin, { withKey: false })).toMatchObject({
    kind: 'unmatched',
    reason: 'thin_unresolved',
  });
  expect(api.requests).toEqual([]);
});

it('starts a refund for a thin charge.refunded, from the fetched charge', async () => {
  api.answers = [
    {
      status: 200,
      body: {
        id: 'ch_thin',
        object: 'charge',
        payment_intent: 'pi_thin1',
        amount: 5400,
        amount_refunded: 5400,
        currency: 'jpy',
        metadata: {},
      },
    },
  ];
  const thin = notification('v1.charge.refunded', {
    id: 'ch_thin',
    type: 'charge',
    url: '/v1/charges/ch_thin',
  });
  expect(await run(thin)).toEqual({
    kind: 'started',
    workflowId: `refund-stripe~${thin.id}`,
    duplicate: false,
  });
  expect(starter.refunds).toEqual([
    {
      eventId: `stripe~${thin.id}`,
      paymentRef: 'stripe~pi_thin1',
      kind: 'cumulative',
      amount: 5400,
      currency: 'jpy',
      status: 'succeeded',
    },
  ]);
});

it('keeps a fetched payment in another currency, or for a foreign order, as unmatched', async () => {
  api.answers = [{ status: 200, body: { ...paymentIntent, currency: 'usd' } }];
  const related = {
    id: 'pi_thin1',
    type: 'payment_intent',
    url: '/v1/payment_intents/pi_thin1',
  };
  expect(await run(notification('v1.payment_intent.succeeded', related))).toMatchObject({
    kind: 'unmatched',
    reason: 'currency',
  });
  api.answers = [{ status: 200, body: { ...paymentIntent, metadata: { order_id: 'ORD-1' } } }];
  expect(await run(notification('v1.payment_intent.succeeded', related))).toMatchObject({
    kind: 'unmatched',
    reason: 'foreign_order_ref',
  });
  expect(starter.starts).toEqual([]);
});

it('fails, without a second start, when starting what the fetched event is fails for good', async () => {
  // Only a failed fetch means "keep it as unmatched": a failure of the start itself is not
  // handed to the same start again as if the fetch had failed.
  const taskQueue = `thin-${randomUUID()}`;
  const real = createStripeApiActivities({
    stripe: createStripeClient({ apiKey: API_KEY, baseUrl: api.url }),
    starter,
    unmatched: inbox,
    shopCurrency: 'jpy',
  });
  let starts = 0;
  const worker = await bundledWorker(env, bundle, taskQueue, {
    ...real,
    deliverThinEvent: async () => {
      starts += 1;
      throw ApplicationFailure.nonRetryable('the database refused the row', 'TestRefusal');
    },
  });
  api.answers = [{ status: 200, body: paymentIntent }];
  const thin = intentSucceeded();
  const eventId = `stripe~${thin.id}`;
  await expect(
    worker.runUntil(
      env.client.workflow.execute<typeof thinEventWorkflow>('thinEventWorkflow', {
        workflowId: thinEventWorkflowId(eventId),
        taskQueue,
        args: [{ eventId, notification: thin }],
        workflowExecutionTimeout: '7 days',
      }),
    ),
  ).rejects.toThrow(WorkflowFailedError);
  expect(starts).toBe(1);
  expect(inbox.entries).toEqual([]);
});
