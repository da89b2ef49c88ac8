import { setTimeout as delay } from 'node:timers/promises';
import type { WorkflowHandle } from '@temporalio/client';
import { createOrdersRepository } from '../../src/db';
import { PAYMENT_DISPUTED_EVENT, PAYMENT_REFUNDED_EVENT } from '../../src/http/providers/original';
import { PAYMENT_WEBHOOK_PATH } from '../../src/http/routes/payment-webhook';
import { signBody } from '../../src/http/signature';
import {
  PAYMENT_SUCCEEDED_EVENT,
  PAYMENTS_TASK_QUEUE,
  paymentWorkflowId,
} from '../../src/shared/constants';
import { disputeWorkflowId, refundWorkflowId } from '../../src/shared/payment-events';
import { thinEventWorkflowId, type ThinEventWorkflowInput } from '../../src/shared/thin-event';
import { AMOUNT } from './crash-scenarios';
import { WEBHOOK_SECRET, type Stack } from './crash-stack';

/**
 * What a crash-point row sends the system: the order the shop created, then the provider's events
 * about it, signed and posted to the webhook as a provider would (a thin event started as the
 * HTTP edge starts one it verified).
 */

export async function createOrder(stack: Stack, tag: string) {
  const { order } = await createOrdersRepository(stack.db.db).createWithIdempotencyKey({
    userId: 1,
    customerEmail: `buyer-${tag}@example.com`,
    totalAmount: AMOUNT,
    idempotencyKey: `crash-${tag}`,
  });
  return order;
}

export async function deliver(
  stack: Stack,
  eventId: string,
  orderId: number,
): Promise<WorkflowHandle> {
  const body = { id: eventId, event: PAYMENT_SUCCEEDED_EVENT, order_id: orderId, amount: AMOUNT };
  await post(stack, eventId, body);
  return stack.client.workflow.getHandle(paymentWorkflowId(eventId));
}

/**
 * A Stripe thin `v1.payment_intent.succeeded` for the order, started as the HTTP edge starts one
 * it verified (the stack's HTTP process speaks the contract's scheme, not Stripe's): its
 * PaymentIntent is what the workers then fetch from the stack's API double.
 */
export async function startThinPayment(
  stack: Stack,
  eventId: string,
  orderId: number,
): Promise<WorkflowHandle> {
  const intent = `pi_${eventId}`;
  stack.stripeApi.answers = [
    {
      status: 200,
      body: {
        id: intent,
        object: 'payment_intent',
        amount: AMOUNT,
        amount_received: AMOUNT,
        currency: 'jpy',
        status: 'succeeded',
        livemode: false,
        metadata: { order_id: String(orderId) },
      },
    },
  ];
  const input: ThinEventWorkflowInput = {
    eventId: `stripe~${eventId}`,
    notification: {
      id: eventId,
      object: 'v2.core.event',
      type: 'v1.payment_intent.succeeded',
      livemode: false,
      related_object: { id: intent, type: 'payment_intent', url: `/v1/payment_intents/${intent}` },
    },
  };
  return stack.client.workflow.start('thinEventWorkflow', {
    taskQueue: PAYMENTS_TASK_QUEUE,
    workflowId: thinEventWorkflowId(input.eventId),
    args: [input],
  });
}

/** A refund of the whole payment `paymentId` (the contract's payment.refunded). */
export async function deliverRefund(
  stack: Stack,
  eventId: string,
  paymentId: string,
  orderId: number,
): Promise<WorkflowHandle> {
  await postAbout(
    stack,
    PAYMENT_REFUNDED_EVENT,
    { eventId, paymentId, orderId },
    {
      refund_id: `re_${eventId}`,
    },
  );
  return stack.client.workflow.getHandle(refundWorkflowId(eventId));
}

/** A dispute of the payment `paymentId` (the contract's payment.disputed). */
export async function deliverDispute(
  stack: Stack,
  eventId: string,
  paymentId: string,
  orderId: number,
  status: 'opened' | 'lost',
): Promise<WorkflowHandle> {
  await postAbout(
    stack,
    PAYMENT_DISPUTED_EVENT,
    { eventId, paymentId, orderId },
    {
      dispute_id: `dp_${paymentId}`,
      status,
      evidence_due_by: '2030-01-31T23:59:59Z',
    },
  );
  return stack.client.workflow.getHandle(disputeWorkflowId(eventId));
}

/** An event about a payment already made, for its whole amount. */
async function postAbout(
  stack: Stack,
  event: string,
  ids: { eventId: string; paymentId: string; orderId: number },
  fields: object,
): Promise<void> {
  await post(stack, ids.eventId, {
    id: ids.eventId,
    event,
    order_id: ids.orderId,
    payment_id: ids.paymentId,
    amount: AMOUNT,
    ...fields,
  });
}

async function post(stack: Stack, eventId: string, body: object): Promise<void> {
  const raw = JSON.stringify(body);
  for (let attempt = 1; attempt <= 40; attempt++) {
    try {
      const response = await fetch(new URL(PAYMENT_WEBHOOK_PATH, stack.baseUrl), {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'x-payment-signature': signBody(raw, WEBHOOK_SECRET),
        },
        body: raw,
        signal: AbortSignal.timeout(15_000),
      });
      await response.text();
      if (response.status === 200) return;
      if (response.status !== 503) throw new Error(`webhook answered ${response.status}`);
    } catch (error) {
      if (error instanceof Error && error.message.startsWith('webhook answered')) throw error;
    }
    await delay(250);
  }
  throw new Error(`webhook for ${eventId} never accepted`);
}
