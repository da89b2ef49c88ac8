import { WorkflowFailedError } from '@temporalio/client';
import { createOrdersRepository, createSettlementsRepository } from '../../src/db';
import { handOverSettlement, recordSettlement } from '../../src/operator/settle';
import { failureAlertWorkflowId, refundReviewAlertWorkflowId } from '../../src/shared/alert';
import { PAYMENTS_TASK_QUEUE, paymentWorkflowId } from '../../src/shared/constants';
import { orderStateQuery, orderWorkflowId, type OrderWorkflowResult } from '../../src/shared/order';
import type { PaymentWorkflowInput } from '../../src/shared/payment';
import type { RefundEvent } from '../../src/shared/payment-events';
import type { aggregateStockWorkflow } from '../../src/workflows';
import type { WarehouseMode } from '../../harness/partners/warehouse-simulator';
import {
  expectFulfilled,
  expectResult,
  finished,
  intake,
  newEventId,
  newOrder,
  openedDigest,
  pay,
  payAndSettle,
  paymentInput,
  show,
  until,
  type Run,
  type Stack,
} from './steps';

/**
 * The scenarios whose histories a set holds: each leaves the workflows it names closed (or, for
 * the failure digest, as far as a new build must replay), and checks that they did what the
 * scenario says, so a set never records a history of something else.
 */

export interface Scenario {
  name: string;
  what: string;
  run(stack: Stack): Promise<Run[]>;
}

export const scenarios: Scenario[] = [
  {
    name: 'fulfilled',
    what: 'a payment that fulfils its order (warehouse, mail, loyalty points)',
    async run(stack) {
      const orderId = await newOrder(stack);
      const payment = await pay(stack, orderId);
      expectResult(payment.result, { created: true }, 'payment');
      const order = await finished(stack.client, orderWorkflowId(orderId));
      return [payment.run, order.run];
    },
  },
  {
    name: 'duplicate-event',
    what: 'an event redelivered after the server forgot its workflow (created=false)',
    async run(stack) {
      const orderId = await newOrder(stack);
      const input = paymentInput(orderId);
      await payAndSettle(stack, orderId, input);
      // What the namespace's retention does to a closed run, done now.
      const workflowId = paymentWorkflowId(input.eventId);
      await stack.client.workflowService.deleteWorkflowExecution({
        namespace: stack.env.namespace ?? 'default',
        workflowExecution: { workflowId },
      });
      await until('the deleted payment run is gone', async () => {
        try {
          await stack.client.workflow.getHandle(workflowId).describe();
          return false;
        } catch {
          return true;
        }
      });
      const again = await pay(stack, orderId, input);
      expectResult(again.result, { created: false }, 'redelivered payment');
      return [again.run];
    },
  },
  {
    name: 'double-charge',
    what: 'a second payment for a paid order: refund review and its alert',
    async run(stack) {
      const orderId = await newOrder(stack);
      await payAndSettle(stack, orderId);
      return flaggedPayment(stack, orderId, paymentInput(orderId), 'second payment');
    },
  },
  {
    name: 'amount-mismatch',
    what: 'a payment that is not the order total: recorded, flagged and alerted, order unpaid',
    async run(stack) {
      const orderId = await newOrder(stack);
      const short = { ...paymentInput(orderId), amount: 1 };
      return flaggedPayment(stack, orderId, short, 'short payment');
    },
  },
  {
    name: 'settled',
    what: 'a short payment settled by an operator (ops settle): the order fulfilled once',
    async run(stack) {
      const orderId = await newOrder(stack);
      await payAndSettle(stack, orderId, { ...paymentInput(orderId), amount: 5000 });
      const outcome = await recordSettlement(createSettlementsRepository(stack.db.db), {
        orderId,
        settledBy: 'record-histories',
        reason: 'customer paid the rest in cash',
      });
      if (outcome.kind !== 'settled') throw new Error(`settle: ${show(outcome)}`);
      await handOverSettlement(stack.client, outcome.settlement);
      const order = await finished(stack.client, orderWorkflowId(orderId));
      expectFulfilled(order.result);
      return [order.run];
    },
  },
  {
    name: 'warehouse-failure',
    what: 'the warehouse rate-limits, then refuses: order Failed, shipment failed, one alert',
    async run(stack) {
      const orderId = await newOrder(stack);
      // A 429 first, so the history holds the budget's durable wait; then a 400 ends the budget.
      const payment = await payUntilRefused(stack, orderId, 429);
      const order = await failedOrder(stack, orderId);
      const stored = await createOrdersRepository(stack.db.db).findById(orderId);
      if (stored?.shipmentStatus !== 'failed')
        throw new Error(`shipment_status should be failed, is ${show(stored?.shipmentStatus)}`);
      const alert = await failureAlert(stack, order.run);
      const digest = await openedDigest(stack, order.run.runId);
      return [payment.run, order.run, alert, digest];
    },
  },
  {
    name: 'warehouse-retried',
    what: 'the warehouse answers 503 twice, then ships: three attempts of one activity (40 s)',
    run: (stack) => fulfilledAfter(stack, { kind: 'unavailable', status: 503 }, 2),
  },
  {
    name: 'warehouse-rate-limited',
    what: 'the warehouse answers 429 with Retry-After: 1, then ships',
    run: (stack) => fulfilledAfter(stack, { kind: 'rate_limit', retryAfter: '1' }, 1),
  },
  {
    name: 'gave-up-with-double-charge',
    what: 'the warehouse refuses while a second payment waits: compensated, the second flagged',
    async run(stack) {
      const orderId = await newOrder(stack);
      // A 503 first, so the second payment arrives while the first's fulfilment retries; then a
      // 400 ends it.
      const payment = await payUntilRefused(stack, orderId, 503);
      const second = paymentInput(orderId);
      await pay(stack, orderId, second);
      const order = await failedOrder(stack, orderId);
      const review = await reviewAlert(stack, orderId, second.eventId);
      await failureAlert(stack, order.run);
      // One history per workflow type and scenario: the second payment and the failure alert
      // take the same paths as in the other scenarios.
      return [payment.run, order.run, review];
    },
  },
  {
    name: 'unknown-order',
    what: 'a payment for an order that does not exist: kept in the unmatched inbox, run completed',
    async run(stack) {
      const missing = (await newOrder(stack)) + 1_000_000;
      const payment = await pay(stack, missing);
      expectResult(payment.result, { kind: 'unmatched', created: true }, 'unknown-order payment');
      return [payment.run];
    },
  },
  {
    name: 'refunded',
    what: 'an order handed to the warehouse refunded in part, then in full: shipment cancelled',
    async run(stack) {
      const orderId = await newOrder(stack);
      const payment = paymentInput(orderId);
      await payAndSettle(stack, orderId, payment);
      const partial = await intake(stack, await stack.starter.startRefund(refundOf(payment, 1000)));
      await finished(stack.client, orderWorkflowId(orderId));
      await intake(stack, await stack.starter.startRefund(refundOf(payment, 4400)));
      const order = await finished(stack.client, orderWorkflowId(orderId));
      return [partial.run, order.run];
    },
  },
  {
    name: 'refunded-while-retried',
    what: 'a full refund while the warehouse answers 503: shipped, then cancelled, never confirmed',
    async run(stack) {
      const orderId = await newOrder(stack);
      const payment = paymentInput(orderId);
      stack.warehouse.setMode({ kind: 'unavailable', status: 503 });
      await pay(stack, orderId, payment, () =>
        until('the warehouse answered 503', async () =>
          stack.warehouse.requests.some((r) => r.orderId === orderId && r.status === 503),
        ),
      );
      const refund = refundOf(payment, 5400);
      await intake(stack, await stack.starter.startRefund(refund));
      const orderRun = stack.client.workflow.getHandle(orderWorkflowId(orderId));
      await until('the order run holds the refund', async () =>
        (await orderRun.query(orderStateQuery)).pending.includes(refund.eventId),
      );
      stack.warehouse.setMode({ kind: 'ok' });
      const order = await finished(stack.client, orderWorkflowId(orderId));
      const outcomes = (order.result as OrderWorkflowResult | undefined)?.processed.map(
        (p) => p.outcome,
      );
      if (show(outcomes) !== show(['fulfilled', 'refund']))
        throw new Error(`the order should be fulfilled, then refunded; it was ${show(outcomes)}`);
      return [order.run];
    },
  },
  {
    name: 'disputed',
    what: 'a dispute of a paid order opened: recorded on the order, one alert with the evidence deadline',
    async run(stack) {
      const orderId = await newOrder(stack);
      const payment = paymentInput(orderId);
      await payAndSettle(stack, orderId, payment);
      const { eventId, n } = newEventId('dispute');
      const dispute = await intake(
        stack,
        await stack.starter.startDispute({
          eventId,
          paymentRef: payment.eventId,
          disputeId: `dp_${n}`,
          amount: 5400,
          status: 'opened',
          evidenceDueBy: '2030-01-01T00:00:00.000Z',
        }),
      );
      const order = await finished(stack.client, orderWorkflowId(orderId));
      return [dispute.run, order.run];
    },
  },
  {
    name: 'stock-aggregation',
    what: 'one stock snapshot, as the schedule starts it',
    async run(stack) {
      const workflowId = `record-histories-aggregate-stock-${Date.now()}`;
      await stack.client.workflow.start<typeof aggregateStockWorkflow>('aggregateStockWorkflow', {
        workflowId,
        taskQueue: PAYMENTS_TASK_QUEUE,
        args: [{ scheduledAt: new Date().toISOString() }],
      });
      const stock = await finished(stack.client, workflowId);
      return [stock.run];
    },
  },
];

/** A refund of `amount` of the payment `payment`, succeeded. */
function refundOf(payment: PaymentWorkflowInput, amount: number): RefundEvent {
  const { eventId, n } = newEventId('refund');
  const status = 'succeeded';
  return {
    eventId,
    paymentRef: payment.eventId,
    kind: 'refund',
    refundId: `re_${n}`,
    amount,
    status,
  };
}

/** A payment the order's run flags for review (a second one, or not the total), and its alert. */
async function flaggedPayment(
  stack: Stack,
  orderId: number,
  input: PaymentWorkflowInput,
  what: string,
): Promise<Run[]> {
  const payment = await pay(stack, orderId, input);
  expectResult(payment.result, { created: true }, what);
  const order = await finished(stack.client, orderWorkflowId(orderId));
  const alert = await reviewAlert(stack, orderId, input.eventId);
  return [payment.run, order.run, alert];
}

/** A payment fulfilled once the warehouse stops answering `mode` (after `times` answers). */
async function fulfilledAfter(stack: Stack, mode: WarehouseMode, times: number): Promise<Run[]> {
  const orderId = await newOrder(stack);
  stack.warehouse.setMode(mode, times);
  const payment = await pay(stack, orderId);
  const order = await finished(stack.client, orderWorkflowId(orderId));
  expectFulfilled(order.result);
  return [payment.run, order.run];
}

/** A payment whose first warehouse call is answered `first` (429 or 503), every later one 400. */
async function payUntilRefused(stack: Stack, orderId: number, first: 429 | 503) {
  stack.warehouse.setMode(
    first === 429 ? { kind: 'rate_limit', retryAfter: '1' } : { kind: 'unavailable', status: 503 },
    1,
  );
  return pay(stack, orderId, paymentInput(orderId), async () => {
    await until(`the warehouse answered the first attempt ${first}`, async () =>
      stack.warehouse.requests.some((r) => r.orderId === orderId && r.status === first),
    );
    stack.warehouse.setMode({ kind: 'reject', status: 400 });
  });
}

/** The order's run, failed by the warehouse's refusal; the warehouse takes orders again. */
async function failedOrder(stack: Stack, orderId: number) {
  const order = await finished(stack.client, orderWorkflowId(orderId));
  stack.warehouse.setMode({ kind: 'ok' });
  if (!(order.failure instanceof WorkflowFailedError))
    throw new Error(`the order workflow should have failed; it returned ${show(order.result)}`);
  return order;
}

async function reviewAlert(stack: Stack, orderId: number, eventId: string): Promise<Run> {
  const alert = await finished(stack.client, refundReviewAlertWorkflowId(orderId, eventId));
  expectResult(alert.result, { delivered: true }, 'refund review alert');
  return alert.run;
}

/** The failed run's alert, which hands the failure to its cause's digest. */
async function failureAlert(stack: Stack, failed: Run): Promise<Run> {
  const alert = await finished(
    stack.client,
    failureAlertWorkflowId(failed.workflowId, failed.runId),
  );
  expectResult(alert.result, { skipped: 'reported-to-digest' }, 'failure alert');
  return alert.run;
}
