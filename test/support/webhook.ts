import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import type { AppDeps } from '../../src/http/app';
import { signBody, signTimestamped } from '../../src/http/signature';
import { PAYMENT_WEBHOOK_PATH } from '../../src/http/routes/payment-webhook';
import { paymentWorkflowId } from '../../src/shared/constants';
import type { RecordUnmatchedInput, UnmatchedInbox } from '../../src/db';
import type { PaymentWorkflowInput } from '../../src/shared/payment';
import type { DisputeEvent, RefundEvent } from '../../src/shared/payment-events';
import type { PaymentStarter, StartedPayment } from '../../src/temporal/payment-starter';
import { buildTestApp } from './app';

export const TEST_WEBHOOK_SECRET = 'test-webhook-secret';

let counter = 0;
/** A fresh, unique provider event ID per call, so tests never collide on workflow IDs. */
export function uniqueEventId(prefix = 'evt'): string {
  counter += 1;
  return `${prefix}_${process.pid}_${Date.now().toString(36)}_${counter}`;
}

export function paymentEvent(
  overrides: Partial<{ id: string; event: string; order_id: number; amount: number }> = {},
) {
  return {
    id: uniqueEventId(),
    event: 'payment.succeeded',
    order_id: 1,
    amount: 5400,
    ...overrides,
  };
}

export interface DeliveryOptions {
  /** A fixed signature header value; null sends none. Default: signed with `secret`. */
  signature?: string | null;
  secret?: string;
  /** Unix seconds: sends X-Payment-Timestamp and signs `<timestamp>.<body>` (timestamped scheme). */
  timestamp?: number | string;
  headers?: Record<string, string | string[]>;
  remoteAddress?: string;
}

/** Delivers a webhook the way the provider does: raw bytes, signed with the shared secret. */
export function deliverWebhook(
  app: FastifyInstance,
  body: unknown,
  options: DeliveryOptions = {},
): Promise<LightMyRequestResponse> {
  const raw = typeof body === 'string' || Buffer.isBuffer(body) ? body : JSON.stringify(body);
  const secret = options.secret ?? TEST_WEBHOOK_SECRET;
  const signature =
    options.signature === null
      ? undefined
      : (options.signature ??
        (options.timestamp === undefined
          ? signBody(raw, secret)
          : signTimestamped(raw, options.timestamp, secret)));
  return app.inject({
    method: 'POST',
    url: PAYMENT_WEBHOOK_PATH,
    payload: raw,
    remoteAddress: options.remoteAddress,
    headers: {
      'content-type': 'application/json',
      ...(signature === undefined ? {} : { 'x-payment-signature': signature }),
      ...(options.timestamp === undefined
        ? {}
        : { 'x-payment-timestamp': String(options.timestamp) }),
      ...options.headers,
    },
  });
}

/** A starter that records what the webhook asked it to start, instead of Temporal. */
export interface RecordingPaymentStarter extends PaymentStarter {
  readonly starts: PaymentWorkflowInput[];
  readonly refunds: RefundEvent[];
  readonly disputes: DisputeEvent[];
}

/**
 * Reports a repeated event ID as a duplicate, as the real starter's ID policies do, with what
 * the ID was first started with, as the real starter reads it from the memo.
 */
export function recordingPaymentStarter(): RecordingPaymentStarter {
  const starts: PaymentWorkflowInput[] = [];
  const refunds: RefundEvent[] = [];
  const disputes: DisputeEvent[] = [];
  const first = new Map<string, { orderId?: number; amount: number }>();
  const keyed = (workflowId: string, input: { orderId?: number; amount: number }) => {
    const earlier = first.get(workflowId);
    if (earlier === undefined) {
      first.set(workflowId, input);
      return Promise.resolve<StartedPayment>({ workflowId, duplicate: false });
    }
    return Promise.resolve<StartedPayment>({
      workflowId,
      duplicate: true,
      existing: { known: true, orderId: earlier.orderId, amount: earlier.amount },
    });
  };
  return {
    starts,
    refunds,
    disputes,
    start(input) {
      starts.push(input);
      return keyed(paymentWorkflowId(input.eventId), input);
    },
    startRefund(event) {
      refunds.push(event);
      return keyed(`refund-${event.eventId}`, event);
    },
    startDispute(event) {
      disputes.push(event);
      return keyed(`dispute-${event.eventId}`, event);
    },
  };
}

/** The unmatched inbox in memory, for webhook-only tests: what the route kept, by event ID. */
export interface RecordingUnmatched extends UnmatchedInbox {
  readonly entries: RecordUnmatchedInput[];
}

export function recordingUnmatched(): RecordingUnmatched {
  const entries: RecordUnmatchedInput[] = [];
  return {
    entries,
    record(input) {
      const index = entries.findIndex((e) => e.eventId === input.eventId);
      if (index === -1) entries.push(input);
      return Promise.resolve({
        id: index === -1 ? entries.length : index + 1,
        created: index === -1,
      });
    },
    countRedelivery(eventId, reason) {
      const index = entries.findIndex((e) => e.eventId === eventId && e.reason === reason);
      return Promise.resolve(index === -1 ? undefined : { id: index + 1 });
    },
  };
}

/**
 * The app for webhook-only tests: `buildTestApp` without a database, so the orders routes get
 * repositories that fail if ever called.
 */
export function buildWebhookApp(
  deps: Pick<AppDeps, 'now'> & { payments: PaymentStarter } & Partial<
      Pick<AppDeps, 'logger' | 'metrics' | 'unmatchedRepository' | 'thinEvents'>
    > & {
      config?: Partial<AppDeps['config']>;
    },
): Promise<FastifyInstance> {
  return buildTestApp(deps);
}

/** Webhook tests' clock: every provider's signature is made and checked at this Unix second. */
export const WEBHOOK_NOW_S = 1_700_000_000;

export interface RecordingWebhookApp {
  app: FastifyInstance;
  starter: RecordingPaymentStarter;
  inbox: RecordingUnmatched;
}

/**
 * The webhook-only app at WEBHOOK_NOW_S, in a JPY shop, that records what it starts and keeps
 * instead of reaching Temporal or a database. `config` names the providers it serves.
 */
export async function recordingWebhookApp(
  config: Partial<AppDeps['config']>,
  deps: Partial<Pick<AppDeps, 'logger' | 'thinEvents'>> = {},
): Promise<RecordingWebhookApp> {
  const starter = recordingPaymentStarter();
  const inbox = recordingUnmatched();
  const app = await buildWebhookApp({
    ...deps,
    payments: starter,
    unmatchedRepository: inbox,
    now: () => WEBHOOK_NOW_S * 1000,
    config: { SHOP_CURRENCY: 'jpy', ...config },
  });
  return { app, starter, inbox };
}

/** The route took a delivery (200 accepted), under the workflow ID `workflowId` when given. */
export function expectAccepted(response: LightMyRequestResponse, workflowId?: string): void {
  expect([response.statusCode, response.json()]).toEqual([200, { status: 'accepted' }]);
  if (workflowId !== undefined) expect(response.headers['x-workflow-id']).toBe(workflowId);
}

/** The route refused a delivery with `status`, saying why in `error`. */
export function expectRefused(
  response: LightMyRequestResponse,
  status: number,
  error: string,
): void {
  expect([response.statusCode, response.json()]).toEqual([status, { error }]);
}

/**
 * The route kept a delivery it cannot pay for a person: 200 (so the provider stops redelivering),
 * no payment started, and one inbox entry with what `entry` names.
 */
export function expectKeptUnmatched(
  response: LightMyRequestResponse,
  { starter, inbox }: Pick<RecordingWebhookApp, 'starter' | 'inbox'>,
  entry: Partial<Record<keyof RecordUnmatchedInput, unknown>>,
): void {
  expect([response.statusCode, response.json()]).toEqual([200, { status: 'unmatched' }]);
  expect(starter.starts).toEqual([]);
  expect(inbox.entries).toEqual([expect.objectContaining(entry)]);
}
