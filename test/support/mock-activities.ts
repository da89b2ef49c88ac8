import type { Activities } from '../../src/activities';

// The mocked activities of the workflow tests that run the order and payment workflows without
// a database or partners: every activity answering as a healthy system would for order 12, each
// test overriding what it is about, and the calls recorded in the order they were made.

/**
 * The order workflow's reads and stamps of which run finished with an event, and the refunds it
 * adds up before each fulfilment: not effects, so not recorded (test/workflows/order-runs.test.ts
 * is about the stamps).
 */
const EVENT_BOOKKEEPING: ReadonlySet<string> = new Set([
  'orderEventHandledBy',
  'markOrderEventHandled',
  'applyRefunds',
]);

/** Every activity of the payments worker, as a healthy system answers for order 12. */
export function healthyActivities(): Activities {
  return {
    recordPayment: async () => ({ paymentId: 7, created: true, firstForOrder: true }),
    handOverToOrder: async () => ({ handedOver: true }),
    orderEventHandledBy: async () => ({ chain: null }),
    markOrderEventHandled: async () => undefined,
    recordRefund: async () => ({ created: true, orderId: 12 }),
    handOverRefundToOrder: async () => ({ handedOver: true }),
    applyRefunds: async () => ({
      refundedAmount: 0,
      fullyRefunded: false,
      shipmentStatus: null,
      returnReviewRequested: false,
    }),
    requestReturnReview: async () => ({ flagged: true }),
    reverseLoyaltyPoints: async () => ({ reversed: false }),
    recordDispute: async () => ({ created: true, orderId: 12 }),
    handOverDisputeToOrder: async () => ({ handedOver: true }),
    applyDisputes: async () => ({ status: 'opened', closedAt: null }),
    notifyWarehouse: async () => ({ shipmentId: 'shp_1', replayed: false }),
    cancelShipment: async () => ({ outcome: 'cancelled', replayed: false }),
    setShipmentStatus: async () => undefined,
    requestRefundReview: async () => undefined,
    sendOrderConfirmation: async () => ({
      sent: true,
      messageId: '<order-12-confirmation@test.local>',
    }),
    awardLoyaltyPoints: async () => ({ awarded: true, points: 100, balance: 100 }),
    deliverAlert: async () => ({ delivered: true }),
    partnerPauseState: async () => ({ paused: false as const }),
    claimPartnerRelease: async () => ({ delayMs: 0 }),
    reportFailure: async () => ({ digestWorkflowId: 'alert-digest-test' }),
    stillFailedRuns: async () => 0,
  };
}

/**
 * The healthy activities with `overrides`, each call (but the event bookkeeping's) handed to
 * `record`, and awaited, before the activity runs.
 */
export function recordingActivities(
  overrides: Partial<Activities>,
  record: (name: keyof Activities, args: unknown[]) => void | Promise<void>,
): Activities {
  const activities = { ...healthyActivities(), ...overrides };
  return Object.fromEntries(
    Object.entries(activities).map(([name, fn]) => [
      name,
      async (...args: unknown[]) => {
        if (!EVENT_BOOKKEEPING.has(name)) await record(name as keyof Activities, args);
        return (fn as (...a: unknown[]) => unknown)(...args);
      },
    ]),
  ) as unknown as Activities;
}
