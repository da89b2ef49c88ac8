import type { Client } from '@temporalio/client';
import { createDisputeActivities } from '../../src/activities/dispute-activities';
import {
  createDisputesRepository,
  createOrdersRepository,
  createPaymentsRepository,
  type OrdersRepository,
} from '../../src/db';
import { disputeRecordedSignal } from '../../src/shared/order';
import type { DisputeEvent, DisputeOutcome } from '../../src/shared/payment-events';
import { OrderIdSearchAttribute } from '../../src/shared/search-attributes';
import { quietActivityEnvironment } from '../support/activity-environment';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';

// The dispute activities, called directly: the order's dispute columns follow every recorded
// event, in any arrival order, and are written only when they change.
describe.each(testDatabases)('dispute activities ($name)', ({ create }) => {
  let handle: TestDatabaseHandle;
  let orders: OrdersRepository;
  let seq = 0;
  const unique = (prefix: string) => `${prefix}_${++seq}`;

  beforeAll(async () => {
    handle = await create();
    orders = createOrdersRepository(handle.db);
  });
  afterAll(() => handle?.close());

  /** The activities over the test database, the signals they sent and the outcome writes. */
  function activities() {
    const signalWithStart = jest.fn().mockResolvedValue(undefined);
    const client = { workflow: { signalWithStart } } as unknown as Client;
    const setDisputeOutcome = jest.fn((orderId: number, outcome: DisputeOutcome) =>
      orders.setDisputeOutcome(orderId, outcome),
    );
    const acts = createDisputeActivities({
      client,
      orders: { ...orders, setDisputeOutcome },
      disputes: createDisputesRepository(handle.db),
    });
    return { acts, signalWithStart, setDisputeOutcome };
  }

  /** Runs a call of an activity inside an activity context. */
  function run<R>(call: () => Promise<R>): Promise<R> {
    return quietActivityEnvironment().run(call);
  }

  async function paidOrder() {
    const { order } = await orders.createWithIdempotencyKey({
      userId: 6,
      customerEmail: 'buyer@example.com',
      totalAmount: 5_000,
    });
    const paymentRef = unique('stripe~pi');
    await createPaymentsRepository(handle.db).recordPayment({
      providerEventId: unique('evt_pay'),
      orderId: order.id,
      amount: 5_000,
      paymentRef,
    });
    return { orderId: order.id, paymentRef };
  }

  function dispute(paymentRef: string, disputeId: string, status: DisputeEvent['status']) {
    const event: DisputeEvent = {
      eventId: unique('stripe~evt_dp'),
      paymentRef,
      disputeId,
      amount: 5_000,
      status,
    };
    return run(() => activities().acts.recordDispute(event)).then((r) => ({ ...r, event }));
  }

  const columns = async (orderId: number) => {
    const order = await orders.findById(orderId);
    return { status: order?.disputeStatus, closedAt: order?.disputeClosedAt };
  };

  describe('recordDispute', () => {
    it('records the event once and finds its order; a retry learns it was recorded', async () => {
      const { orderId, paymentRef } = await paidOrder();
      const first = await dispute(paymentRef, 'dp_1', 'opened');
      expect(first).toMatchObject({ created: true, orderId });
      expect(await run(() => activities().acts.recordDispute(first.event))).toEqual({
        created: false,
        orderId,
      });
      expect(await dispute(unique('stripe~pi'), 'dp_2', 'opened')).toMatchObject({
        created: true,
        orderId: null,
      });
    });
  });

  describe('handOverDisputeToOrder', () => {
    it("signals the order's workflow (starting it if need be) with the dispute event", async () => {
      const { acts, signalWithStart } = activities();
      const event = { kind: 'dispute' as const, eventId: unique('stripe~evt_dp') };

      expect(await run(() => acts.handOverDisputeToOrder({ orderId: 43, event }))).toEqual({
        handedOver: true,
      });
      expect(signalWithStart).toHaveBeenCalledTimes(1);
      expect(signalWithStart).toHaveBeenCalledWith('orderWorkflow', {
        workflowId: 'order-43',
        taskQueue: 'test',
        args: [{ orderId: 43 }],
        signal: disputeRecordedSignal,
        signalArgs: [event],
        memo: { orderId: 43 },
        typedSearchAttributes: [{ key: OrderIdSearchAttribute, value: 43 }],
      });
    });

    it('signals nothing once an order run finished with the event', async () => {
      const { orderId, paymentRef } = await paidOrder();
      const { event } = await dispute(paymentRef, 'dp_h', 'opened');
      const { acts, signalWithStart } = activities();
      const input = { orderId, event: { kind: 'dispute' as const, eventId: event.eventId } };

      expect(await run(() => acts.handOverDisputeToOrder(input))).toEqual({ handedOver: true });
      await createDisputesRepository(handle.db).markHandled(event.eventId, 'chain-1');
      expect(await run(() => acts.handOverDisputeToOrder(input))).toEqual({ handedOver: false });
      expect(signalWithStart).toHaveBeenCalledTimes(1);
    });
  });

  describe('applyDisputes', () => {
    it('writes nothing for an order without disputes', async () => {
      const { orderId } = await paidOrder();
      const { acts, setDisputeOutcome } = activities();
      expect(await run(() => acts.applyDisputes({ orderId }))).toEqual({
        status: null,
        closedAt: null,
      });
      expect(setDisputeOutcome).not.toHaveBeenCalled();
    });

    it('records an open dispute, then its closure, and writes again only when they change', async () => {
      const { orderId, paymentRef } = await paidOrder();
      await dispute(paymentRef, 'dp_x', 'opened');
      const { acts, setDisputeOutcome } = activities();

      expect(await run(() => acts.applyDisputes({ orderId }))).toEqual({
        status: 'opened',
        closedAt: null,
      });
      expect(await columns(orderId)).toEqual({ status: 'opened', closedAt: null });
      // The same events again (a retry, or a redelivery handed over): nothing to write.
      await run(() => acts.applyDisputes({ orderId }));
      expect(setDisputeOutcome).toHaveBeenCalledTimes(1);

      const lost = await dispute(paymentRef, 'dp_x', 'lost');
      const closedAt = (await createDisputesRepository(handle.db).forOrder(orderId)).find(
        (d) => d.status === 'lost',
      )?.recordedAt;
      expect(await run(() => acts.applyDisputes({ orderId }))).toEqual({
        status: 'lost',
        closedAt,
      });
      expect(await columns(orderId)).toEqual({ status: 'lost', closedAt });
      await run(() => acts.applyDisputes({ orderId }));
      expect(setDisputeOutcome).toHaveBeenCalledTimes(2);
      expect(lost.created).toBe(true);
    });

    it('takes a closure recorded before the opening as closed, whatever the arrival order', async () => {
      const { orderId, paymentRef } = await paidOrder();
      await dispute(paymentRef, 'dp_y', 'won');
      const { acts } = activities();
      const afterWon = await run(() => acts.applyDisputes({ orderId }));
      await dispute(paymentRef, 'dp_y', 'opened');

      expect(await run(() => acts.applyDisputes({ orderId }))).toEqual(afterWon);
      expect(afterWon.status).toBe('won');
      expect(await columns(orderId)).toEqual(afterWon);
    });

    it('writes a later closure of another dispute even when the status stays the same', async () => {
      const { orderId, paymentRef } = await paidOrder();
      await dispute(paymentRef, 'dp_1', 'won');
      const { acts, setDisputeOutcome } = activities();
      const first = await run(() => acts.applyDisputes({ orderId }));
      // Recorded at least a millisecond later, so that its closure time differs.
      await new Promise((resolve) => setTimeout(resolve, 5));
      await dispute(paymentRef, 'dp_2', 'won');

      const second = await run(() => acts.applyDisputes({ orderId }));
      expect(second.status).toBe('won');
      expect(second.closedAt! > first.closedAt!).toBe(true);
      expect(await columns(orderId)).toEqual(second);
      expect(setDisputeOutcome).toHaveBeenCalledTimes(2);
    });
  });
});
