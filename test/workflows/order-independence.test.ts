import { randomUUID } from 'node:crypto';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import fc from 'fast-check';
import { createLoyaltyRepository, createOrdersRepository } from '../../src/db';
import { disputeAlertWorkflowId, returnReviewAlertWorkflowId } from '../../src/shared/alert';
import { paymentWorkflowId } from '../../src/shared/constants';
import { orderWorkflowId } from '../../src/shared/order';
import {
  disputeWorkflowId,
  refundWorkflowId,
  type DisputeEvent,
  type RefundEvent,
} from '../../src/shared/payment-events';
import type { PaymentWorkflowInput } from '../../src/shared/payment';
import { testDatabases } from '../../harness/databases';
import { createTestOrder } from '../support/orders';
import { useOrderWorker, useTimeSkippingStack } from '../support/time-skipping-stack';

// Issue 25, point 1: "any order and any duplication of {payment, partial refund, full refund,
// dispute opened, dispute closed} for one order ends in the same final state". Each generated
// sequence names the five facts of a fresh order, in any order, some delivered more than once
// (a redelivery of the same event, or for refunds and disputes another event reporting the
// same fact), and runs them through the real workflows and activities, the warehouse simulator
// and an alert sink, on the time-skipping server, on SQLite and PostgreSQL. The first case of
// each database is the five in their natural order; every sequence must end where it ended.
//
// ORDER_INDEPENDENCE_SEED replays a run (fast-check prints the seed of a failure);
// ORDER_INDEPENDENCE_RUNS sets the sequences per database (15 by default: well under a minute in all).
const SEED = process.env.ORDER_INDEPENDENCE_SEED
  ? Number(process.env.ORDER_INDEPENDENCE_SEED)
  : undefined;
const RUNS = Number(process.env.ORDER_INDEPENDENCE_RUNS ?? 15);

const TOTAL = 5400;
const PARTIAL = 2000;

type Fact = 'payment' | 'partial_refund' | 'full_refund' | 'dispute_opened' | 'dispute_closed';
const FACTS: readonly Fact[] = [
  'payment',
  'partial_refund',
  'full_refund',
  'dispute_opened',
  'dispute_closed',
];

/** One delivery: a fact, and whether it comes as the same event again or as another event. */
interface Delivery {
  fact: Fact;
  /** 0: the fact's first event ID; n > 0: a redelivery (even) or another event (odd). */
  copy: number;
}

/** Every fact at least once, up to 3 deliveries of each, shuffled. */
const sequences = fc.tuple(...FACTS.map(() => fc.integer({ min: 1, max: 3 }))).chain((counts) => {
  const deliveries = FACTS.flatMap((fact, i) =>
    Array.from({ length: counts[i]! }, (_, copy): Delivery => ({ fact, copy })),
  );
  return fc.shuffledSubarray(deliveries, {
    minLength: deliveries.length,
    maxLength: deliveries.length,
  });
});

const stack = useTimeSkippingStack({ partners: true, sink: true });

describe.each(testDatabases)('order independence ($name)', ({ name, create }) => {
  const worker = useOrderWorker(stack, { name, create }, { queue: 'independence', alerts: true });
  const { taskQueue } = worker;

  /** Starts an intake workflow and waits for it; a redelivery of a finished one is a no-op. */
  async function deliver(workflowType: string, workflowId: string, arg: unknown): Promise<void> {
    try {
      await stack.env.client.workflow.execute(workflowType, {
        taskQueue,
        workflowId,
        args: [arg],
        workflowExecutionTimeout: '1 hour',
        // As the webhook's starter: an event ID already taken is a duplicate, not a new run.
        workflowIdReusePolicy: 'REJECT_DUPLICATE',
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    }
  }

  /** Runs one sequence for a fresh order and returns what it ended as. */
  async function run(sequence: readonly Delivery[]): ReturnType<typeof finalState> {
    const userId = 10_000 + Math.floor(Math.random() * 1_000_000);
    const order = await createTestOrder(createOrdersRepository(worker.db.db), { userId });
    const key = `${name}-${order.id}-${randomUUID().slice(0, 8)}`;
    const paymentRef = `stripe~pi_${key}`;
    const disputeId = `dp_${key}`;
    // A redelivery (even copy) reuses the fact's event ID; another event (odd) gets its own.
    const eventId = (fact: Fact, copy: number) =>
      `evt_${fact}_${key}${copy % 2 === 1 ? `_${copy}` : ''}`;

    for (const { fact, copy } of sequence) {
      switch (fact) {
        case 'payment': {
          // The same payment again: a provider never reports one payment under two event IDs.
          const id = eventId(fact, 0);
          const input: PaymentWorkflowInput = {
            eventId: id,
            orderId: order.id,
            amount: TOTAL,
            paymentRef,
          };
          await deliver('paymentWorkflow', paymentWorkflowId(id), input);
          break;
        }
        case 'partial_refund':
        case 'full_refund': {
          const id = eventId(fact, copy);
          // The partial refund is one refund (refund.created/updated); the full one is the
          // payment's refunded total (charge.refunded), which covers the partial one.
          const event: RefundEvent =
            fact === 'partial_refund'
              ? {
                  eventId: id,
                  paymentRef,
                  kind: 'refund',
                  refundId: `re_${key}`,
                  amount: PARTIAL,
                  status: 'succeeded',
                }
              : { eventId: id, paymentRef, kind: 'cumulative', amount: TOTAL, status: 'succeeded' };
          await deliver('refundWorkflow', refundWorkflowId(id), event);
          break;
        }
        case 'dispute_opened':
        case 'dispute_closed': {
          const id = eventId(fact, copy);
          const event: DisputeEvent = {
            eventId: id,
            paymentRef,
            disputeId,
            amount: TOTAL,
            status: fact === 'dispute_opened' ? 'opened' : 'lost',
            orderId: order.id,
          };
          await deliver('disputeWorkflow', disputeWorkflowId(id), event);
          break;
        }
      }
    }
    // Every hand-over was done when its intake workflow completed: the order's latest run has
    // every event it will get.
    await stack.env.client.workflow.getHandle(orderWorkflowId(order.id)).result();
    await stack.env.client.workflow.getHandle(disputeAlertWorkflowId(disputeId)).result();
    return finalState(order.id, userId, key);
  }

  /**
   * What the order ended as, in the terms of the issue. Where the path may differ without the
   * outcome differing, the outcome is compared: a full refund that came before the payment's
   * hand-over ships nothing, one that came after cancels what was requested, so the warehouse
   * is compared by what it will ship (nothing), `shipment_status` by whether it ships (null and
   * `cancelled` both mean no), and the points by their balance (awarded and taken back, or
   * never awarded). Every other part is compared as it is.
   */
  async function finalState(orderId: number, userId: number, key: string) {
    // Event IDs name the run (its key): compared without it.
    const unkeyed = (eventId: string) => eventId.replace(key, '<key>');
    const order = await createOrdersRepository(worker.db.db).findById(orderId);
    const payments = await worker.db.db
      .selectFrom('payments')
      .select(['provider_event_id', 'amount'])
      .where('order_id', '=', orderId)
      .orderBy('provider_event_id')
      .execute();
    const refunds = await worker.db.db
      .selectFrom('refunds')
      .select(['provider_event_id', 'order_id', 'kind', 'amount', 'status'])
      .where('payment_ref', '=', `stripe~pi_${key}`)
      .orderBy('provider_event_id')
      .execute();
    const disputes = await worker.db.db
      .selectFrom('disputes')
      .select(['order_id', 'status'])
      .where('payment_ref', '=', `stripe~pi_${key}`)
      .execute();
    const shipments = [...stack.partners.warehouse.shipments.values()].filter(
      (s) => s.orderId === orderId,
    );
    const cancels = stack.partners.warehouse.cancels.filter((c) => c.orderId === orderId);
    const alerts = stack.sink.received
      .map((r) => r.body.alert)
      .filter((a) => a.order_id === orderId)
      .map((a) => `${String(a.kind)}:${String(a.failure_type)}`)
      .sort();
    const reviewAlertsStarted = await Promise.all(
      [returnReviewAlertWorkflowId(orderId)].map((id) =>
        stack.env.client.workflow
          .getHandle(id)
          .describe()
          .then(
            () => id,
            () => null,
          ),
      ),
    );
    return {
      order: {
        status: order?.status,
        totalAmount: order?.totalAmount,
        refundedAmount: order?.refundedAmount,
        ships: order?.shipmentStatus === 'requested',
        shipmentFailed: order?.shipmentStatus === 'failed',
        refundReview: order?.refundReviewRequestedAt !== null,
        returnReview: order?.returnReviewRequestedAt !== null,
      },
      payments: payments.map((p) => [unkeyed(p.provider_event_id), Number(p.amount)]),
      // Another event reporting the same refund is a row of its own: compared as facts, once each.
      refunds: [
        ...new Set(
          refunds.map((r) =>
            JSON.stringify([r.order_id === orderId, r.kind, Number(r.amount), r.status]),
          ),
        ),
      ].sort(),
      warehouse: {
        // At most one shipment was ever created, and none is left to ship.
        shipmentsCreated: shipments.length <= 1,
        toShip: shipments.filter((s) => s.status !== 'cancelled').length,
        // Every cancel asked found its shipment and was taken (200): no 404, 409 or 422.
        cancelsRefused: cancels.filter((c) => c.status !== 200).length,
      },
      points: await createLoyaltyRepository(worker.db.db).balanceOf(userId),
      // One dispute alert per dispute, whatever number of events reported it; no review alert.
      alerts,
      reviewAlertsStarted: reviewAlertsStarted.filter((id) => id !== null),
      // Where its disputes stand on the order (the closure wins whatever came first), and the
      // recorded dispute events as facts, once each (another event reporting the same status).
      dispute: {
        status: order?.disputeStatus,
        closed: order?.disputeClosedAt !== null,
        events: [
          ...new Set(disputes.map((d) => JSON.stringify([d.order_id === orderId, d.status]))),
        ].sort(),
      },
    };
  }

  it('ends in the same state whatever the order and duplication of the events', async () => {
    const natural = FACTS.map((fact): Delivery => ({ fact, copy: 0 }));
    const reference = await run(natural);
    // What the natural order ends as, spelled out: the rest must end the same.
    expect(reference).toMatchObject({
      order: {
        status: 'paid',
        refundedAmount: TOTAL,
        ships: false,
        refundReview: false,
        returnReview: false,
      },
      warehouse: { shipmentsCreated: true, toShip: 0, cancelsRefused: 0 },
      points: 0,
      reviewAlertsStarted: [],
      dispute: { status: 'lost', closed: true, events: ['[true,"lost"]', '[true,"opened"]'] },
    });
    expect(reference.alerts).toEqual(['dispute:DisputeOpened']);

    await fc.assert(
      fc.asyncProperty(sequences, async (sequence) => {
        expect(await run(sequence)).toEqual(reference);
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true },
    );
  });
});
