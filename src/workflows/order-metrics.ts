import { metricMeter } from '@temporalio/workflow';
import { BusinessMetric, type FulfilmentOutcome } from '../shared/business-metrics';
import type { FulfilmentFailedDetails, OrderPaymentEvent } from '../shared/order';

// The workflow meter drops replayed emits, but a failed task that reruns may count twice: these
// are trends for a dashboard; the database is the record.

export function countFulfilment(outcome: FulfilmentOutcome): void {
  metricMeter
    .createCounter(BusinessMetric.fulfilments, undefined, "Paid orders' fulfilments by outcome")
    .add(1, { outcome });
}

/** The order was compensated (shipment_status=failed): by the cause the retries ended on. */
export function countCompensation(details: FulfilmentFailedDetails): void {
  countFulfilment('compensated');
  metricMeter
    .createCounter(
      BusinessMetric.compensations,
      undefined,
      'Fulfilments compensated after the warehouse call gave up, by last failure type and reason',
    )
    .add(1, { cause: details.lastFailureType ?? 'unknown', reason: details.reason });
}

/** Events handed over by an older build carry no acceptance time, and are only counted. */
export function countShipment(event: Pick<OrderPaymentEvent, 'paidAt'>): void {
  countFulfilment('shipped');
  if (event.paidAt === undefined) return;
  metricMeter
    .createHistogram(
      BusinessMetric.paymentToShipment,
      'float',
      undefined,
      'Seconds from the webhook accepting a payment to the warehouse taking its order',
    )
    .record(Math.max(0, Date.now() - event.paidAt) / 1000);
}
