import { createDisputeActivities } from '../../src/activities/dispute-activities';
import { createDisputesRepository } from '../../src/db';
import { disputeRecordedSignal } from '../../src/shared/order';
import type { DisputeEvent, DisputeOutcome } from '../../src/shared/payment-events';
import { testDatabases } from '../../harness/databases';
import {
  inActivity,
  orderHandOver,
  recordingClient,
  useIntakeDatabase,
} from '../support/intake-activities';

// The dispute activities, called directly: the order's dispute columns follow every recorded
// event, in any arrival order, and are written only when they change.
describe.each(testDatabases)('dispute activities ($name)', ({ create }) => {
  const database = useIntakeDatabase(create);
  const { unique } = database;

  /** The activities over the test database, the signals they sent and the outcome writes. */
  function activities() {
    const { client, signalWithStart } = recordingClient();
    const setDisputeOutcome = jest.fn((orderId: number, outcome: DisputeOutcome) =>
      database.orders.setDisputeOutcome(orderId, outcome),
    );
    const acts = createDisputeActivities({
      client,
      orders: { ...database.orders, setDisputeOutcome },
      disputes: createDisputesRepository(database.handle.db),
    });
    return { acts, signalWithStart, setDisputeOutcome };
  }

  function dispute(paymentRef: string, disputeId: string, status: DisputeEvent['status']) {
    const event: DisputeEvent = {
      eventId: unique('stripe~evt_dp'),
      paymentRef,
      disputeId,
      amount: 5_000,
      status,
    };
    return inActivity(() => activities().acts.recordDispute(event)).then((r) => ({ ...r, event }));
  }

  const columns = async (orderId: number) => {
    const order = await database.orders.findById(orderId);
    return { status: order?.disputeStatus, closedAt: order?.disputeClosedAt };
  };

  describe('recordDispute', () => {
    it('records the event once and finds its order; a retry learns it was recorded', async () => {
      const { orderId, paymentRef } = await database.paidOrder();
      const first = await dispute(paymentRef, 'dp_1', 'opened');
      expect(first).toMatchObject({ created: true, orderId });
      expect(await inActivity(() => activities().acts.recordDispute(first.event))).toEqual({
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

      expect(await inActivity(() => acts.handOverDisputeToOrder({ orderId: 43, event }))).toEqual({
        handedOver: true,
      });
      expect(signalWithStart).toHaveBeenCalledTimes(1);
      expect(signalWithStart).toHaveBeenCalledWith(
        ...orderHandOver(43, disputeRecordedSignal, event),
      );
    });

    it('signals nothing once an order run finished with the event', async () => {
      const { orderId, paymentRef } = await database.paidOrder();
      const { event } = await dispute(paymentRef, 'dp_h', 'opened');
      const { acts, signalWithStart } = activities();
      const input = { orderId, event: { kind: 'dispute' as const, eventId: event.eventId } };

      expect(await inActivity(() => acts.handOverDisputeToOrder(input))).toEqual({
        handedOver: true,
      });
      await createDisputesRepository(database.handle.db).markHandled(event.eventId, 'chain-1');
      expect(await inActivity(() => acts.handOverDisputeToOrder(input))).toEqual({
        handedOver: false,
      });
      expect(signalWithStart).toHaveBeenCalledTimes(1);
    });
  });

  describe('applyDisputes', () => {
    it('writes nothing for an order without disputes', async () => {
      const { orderId } = await database.paidOrder();
      const { acts, setDisputeOutcome } = activities();
      expect(await inActivity(() => acts.applyDisputes({ orderId }))).toEqual({
        status: null,
        closedAt: null,
      });
      expect(setDisputeOutcome).not.toHaveBeenCalled();
    });

    it('records an open dispute, then its closure, and writes again only when they change', async () => {
      const { orderId, paymentRef } = await database.paidOrder();
      await dispute(paymentRef, 'dp_x', 'opened');
      const { acts, setDisputeOutcome } = activities();

      expect(await inActivity(() => acts.applyDisputes({ orderId }))).toEqual({
        status: 'opened',
        closedAt: null,
      });
      expect(await columns(orderId)).toEqual({ status: 'opened', closedAt: null });
      // The same events again (a retry, or a redelivery handed over): nothing to write.
      await inActivity(() => acts.applyDisputes({ orderId }));
      expect(setDisputeOutcome).toHaveBeenCalledTimes(1);

      const lost = await dispute(paymentRef, 'dp_x', 'lost');
      const closedAt = (await createDisputesRepository(database.handle.db).forOrder(orderId)).find(
        (d) => d.status === 'lost',
      )?.recordedAt;
      expect(await inActivity(() => acts.applyDisputes({ orderId }))).toEqual({
        status: 'lost',
        closedAt,
      });
      expect(await columns(orderId)).toEqual({ status: 'lost', closedAt });
      await inActivity(() => acts.applyDisputes({ orderId }));
      expect(setDisputeOutcome).toHaveBeenCalledTimes(2);
      expect(lost.created).toBe(true);
    });

    it('takes a closure recorded before the opening as closed, whatever the arrival order', async () => {
      const { orderId, paymentRef } = await database.paidOrder();
      await dispute(paymentRef, 'dp_y', 'won');
      const { acts } = activities();
      const afterWon = await inActivity(() => acts.applyDisputes({ orderId }));
      await dispute(paymentRef, 'dp_y', 'opened');

      expect(await inActivity(() => acts.applyDisputes({ orderId }))).toEqual(afterWon);
      expect(afterWon.status).toBe('won');
      expect(await columns(orderId)).toEqual(afterWon);
    });

    it('writes a later closure of another dispute even when the status stays the same', async () => {
      const { orderId, paymentRef } = await database.paidOrder();
      await dispute(paymentRef, 'dp_1', 'won');
      const { acts, setDisputeOutcome } = activities();
      const first = await inActivity(() => acts.applyDisputes({ orderId }));
      // Recorded at least a millisecond later, so that its closure time differs.
      await new Promise((resolve) => setTimeout(resolve, 5));
      await dispute(paymentRef, 'dp_2', 'won');

      const second = await inActivity(() => acts.applyDisputes({ orderId }));
      expect(second.status).toBe('won');
      expect(second.closedAt! > first.closedAt!).toBe(true);
      expect(await columns(orderId)).toEqual(second);
      expect(setDisputeOutcome).toHaveBeenCalledTimes(2);
    });
  });
});
