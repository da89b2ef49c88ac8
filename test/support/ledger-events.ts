import type { DisputeEvent, RefundEvent } from '../../src/shared/payment-events';

let seq = 0;
/** What every ledger event carries: an event ID unique in the test file, its payment, JPY. */
const ofPayment = (kind: string, paymentRef: string) => {
  const eventId = `stripe~evt_${kind}_${++seq}`;
  return { eventId, paymentRef, id: `${kind}_${seq}`, currency: 'jpy' };
};

/** A refund of 1 200 that succeeded, of the payment under `paymentRef`. */
export function refundEvent(paymentRef: string, overrides: Partial<RefundEvent> = {}): RefundEvent {
  const { id, ...event } = ofPayment('re', paymentRef);
  return {
    ...event,
    kind: 'refund',
    refundId: id,
    amount: 1_200,
    status: 'succeeded',
    ...overrides,
  };
}

/** The opening of a dispute of 5 000, with every optional field, of that payment. */
export function disputeEvent(
  paymentRef: string,
  overrides: Partial<DisputeEvent> = {},
): DisputeEvent {
  const { id, ...event } = ofPayment('dp', paymentRef);
  const evidenceDueBy = '2026-12-24T00:00:00.000Z';
  return {
    ...event,
    disputeId: id,
    amount: 5_000,
    status: 'opened',
    evidenceDueBy,
    reason: 'fraudulent',
    ...overrides,
  };
}
