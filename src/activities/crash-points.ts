import type {
  ActivityInboundCallsInterceptor,
  ActivityInterceptorsFactory,
} from '@temporalio/worker';

/**
 * Every place a worker crash could split an effect from its record (docs/chaos.md). Only a test
 * preload (harness/hooks/worker-hook.ts) installs the hook; no setting can, and without it every
 * point is one `if`.
 */

export type CrashPointKind = 'db' | 'partner' | 'temporal' | 'file' | 'reply';

export interface CrashPointDeclaration {
  activity: string;
  kind: CrashPointKind;
  description: string;
}

const effect = (activity: string, kind: CrashPointKind, description: string) =>
  ({ activity, kind, description }) satisfies CrashPointDeclaration;
const reply = (activity: string) =>
  effect(activity, 'reply', `${activity} returned; its result has not reached Temporal`);

/** The list the enumerated run reads: one entry per effect and per activity's reply. */
export const CRASH_POINTS = {
  'recordPayment.commit': effect(
    'recordPayment',
    'db',
    'the transaction that inserts the payment row (insert-or-get) and claims the order, or keeps a payment for an unknown order in the unmatched inbox',
  ),
  'recordPayment.reply': reply('recordPayment'),
  'handOverToOrder.signal': effect(
    'handOverToOrder',
    'temporal',
    "signal-with-start of the order's workflow with the payment event",
  ),
  'handOverToOrder.reply': reply('handOverToOrder'),
  'notifyWarehouse.request': effect(
    'notifyWarehouse',
    'partner',
    'POST /v1/shipments to the warehouse, idempotency key order-<id>-shipment',
  ),
  'notifyWarehouse.signal': effect(
    'notifyWarehouse',
    'temporal',
    "signal to the order's workflow that an attempt failed and will be retried (its Web UI details)",
  ),
  'notifyWarehouse.reply': reply('notifyWarehouse'),
  'cancelShipment.request': effect(
    'cancelShipment',
    'partner',
    'POST /v1/shipments/order-<id>-shipment/cancel, idempotency key order-<id>-shipment-cancel',
  ),
  'cancelShipment.reply': reply('cancelShipment'),
  'setShipmentStatus.commit': effect(
    'setShipmentStatus',
    'db',
    "the UPDATE of the order's shipment_status (requested, or failed in the compensation)",
  ),
  'setShipmentStatus.reply': reply('setShipmentStatus'),
  'orderEventHandledBy.reply': reply('orderEventHandledBy'),
  'markOrderEventHandled.commit': effect(
    'markOrderEventHandled',
    'db',
    "the UPDATE that records which order workflow chain finished with a payment's event",
  ),
  'markOrderEventHandled.reply': reply('markOrderEventHandled'),
  'recordRefund.commit': effect(
    'recordRefund',
    'db',
    'the insert-or-get of the refund event (UNIQUE provider_event_id) and its match to an order',
  ),
  'recordRefund.reply': reply('recordRefund'),
  'handOverRefundToOrder.signal': effect(
    'handOverRefundToOrder',
    'temporal',
    "signal-with-start of the order's workflow with the refund event",
  ),
  'handOverRefundToOrder.reply': reply('handOverRefundToOrder'),
  'applyRefunds.commit': effect(
    'applyRefunds',
    'db',
    "the UPDATE of the order's refunded_amount to what its refunds add up to",
  ),
  'applyRefunds.reply': reply('applyRefunds'),
  'recordDispute.commit': effect(
    'recordDispute',
    'db',
    'the insert-or-get of the dispute event (UNIQUE provider_event_id) and its match to an order',
  ),
  'recordDispute.reply': reply('recordDispute'),
  'handOverDisputeToOrder.signal': effect(
    'handOverDisputeToOrder',
    'temporal',
    "signal-with-start of the order's workflow with the dispute event",
  ),
  'handOverDisputeToOrder.reply': reply('handOverDisputeToOrder'),
  'applyDisputes.commit': effect(
    'applyDisputes',
    'db',
    "the UPDATE of the order's dispute_status and dispute_closed_at to where its disputes stand",
  ),
  'applyDisputes.reply': reply('applyDisputes'),
  'requestReturnReview.commit': effect(
    'requestReturnReview',
    'db',
    'the UPDATE that flags a fully refunded order the warehouse took for a return review',
  ),
  'requestReturnReview.reply': reply('requestReturnReview'),
  'reverseLoyaltyPoints.commit': effect(
    'reverseLoyaltyPoints',
    'db',
    'the ledger row (UNIQUE order, order_refunded) that takes back the points, and the balance',
  ),
  'reverseLoyaltyPoints.reply': reply('reverseLoyaltyPoints'),
  'requestRefundReview.commit': effect(
    'requestRefundReview',
    'db',
    'the UPDATE that flags a double-charged order for refund review',
  ),
  'requestRefundReview.reply': reply('requestRefundReview'),
  'sendOrderConfirmation.smtp': effect(
    'sendOrderConfirmation',
    'partner',
    'the SMTP transaction of the confirmation mail, up to the server’s 250',
  ),
  'sendOrderConfirmation.stamp': effect(
    'sendOrderConfirmation',
    'db',
    'the UPDATE that stamps orders.confirmation_sent_at',
  ),
  'sendOrderConfirmation.reply': reply('sendOrderConfirmation'),
  'awardLoyaltyPoints.commit': effect(
    'awardLoyaltyPoints',
    'db',
    'the transaction that inserts the ledger row (UNIQUE order, reason) and moves the balance',
  ),
  'awardLoyaltyPoints.reply': reply('awardLoyaltyPoints'),
  'deliverAlert.post': effect(
    'deliverAlert',
    'partner',
    'POST of the alert to the alert webhook, Idempotency-Key alert-<workflow>-<run>',
  ),
  'deliverAlert.stamp': effect(
    'deliverAlert',
    'db',
    'the INSERT that stamps the alert as delivered (alert_deliveries, by alert workflow ID)',
  ),
  'deliverAlert.reply': reply('deliverAlert'),
  'reportFailure.signal': effect(
    'reportFailure',
    'temporal',
    "signal-with-start of the cause's digest (alert-digest-<cause>) with the failed run",
  ),
  'reportFailure.reply': reply('reportFailure'),
  'stillFailedRuns.reply': reply('stillFailedRuns'),
  'findSlaBreaches.reply': reply('findSlaBreaches'),
  'reportSlaCheck.signal': effect(
    'reportSlaCheck',
    'temporal',
    "signal(-with-start) of the SLA cause's incident (sla-incident-<cause>) with the check",
  ),
  'reportSlaCheck.reply': reply('reportSlaCheck'),
  'generateInvoicePdf.write': effect(
    'generateInvoicePdf',
    'file',
    'order-<id>.pdf written to a temporary file and renamed over the target',
  ),
  'generateInvoicePdf.reply': reply('generateInvoicePdf'),
  'planOrderExport.clear': effect(
    'planOrderExport',
    'file',
    'removal of the chunk files an earlier export under the same ID left',
  ),
  'planOrderExport.reply': reply('planOrderExport'),
  'exportOrdersChunk.write': effect(
    'exportOrdersChunk',
    'file',
    'chunk-<n>.csv written atomically',
  ),
  'exportOrdersChunk.reply': reply('exportOrdersChunk'),
  'finishOrderExport.join': effect(
    'finishOrderExport',
    'file',
    'orders.csv (header and every chunk) written atomically',
  ),
  'finishOrderExport.index': effect(
    'finishOrderExport',
    'file',
    'index.json (rows, order IDs and sha256) written atomically',
  ),
  'finishOrderExport.reply': reply('finishOrderExport'),
  'aggregateStock.commit': effect(
    'aggregateStock',
    'db',
    'the insert-or-get of the stock snapshot of one scheduled time',
  ),
  'aggregateStock.reply': reply('aggregateStock'),
  'fetchThinEventObject.reply': reply('fetchThinEventObject'),
  'deliverThinEvent.deliver': effect(
    'deliverThinEvent',
    'temporal',
    "the start of the thin event's payment, refund or dispute workflow, or its unmatched row",
  ),
  'deliverThinEvent.reply': reply('deliverThinEvent'),
  'partnerPauseState.reply': reply('partnerPauseState'),
  'claimPartnerRelease.commit': effect(
    'claimPartnerRelease',
    'db',
    "the UPDATE that takes the next slot of a partner's rate-limited release",
  ),
  'claimPartnerRelease.reply': reply('claimPartnerRelease'),
} as const satisfies Record<string, CrashPointDeclaration>;

export type CrashPointName = keyof typeof CRASH_POINTS;
/** Where around the point the worker dies: an effect has both; a reply only `before`. */
export type CrashPhase = 'before' | 'after';
export type CrashPointHook = (point: CrashPointName, phase: CrashPhase) => void;

/** Where the test preload puts its hook; read once, when this module loads. */
export const CRASH_POINT_HOOK = Symbol.for('order-payments.crash-point-hook');
const hook = (globalThis as { [CRASH_POINT_HOOK]?: CrashPointHook })[CRASH_POINT_HOOK];

export async function atCrashPoint<T>(point: CrashPointName, run: () => Promise<T>): Promise<T> {
  if (!hook) return run();
  hook(point, 'before');
  const result = await run();
  hook(point, 'after');
  return result;
}

/** After the activity returned, before its completion is sent. Empty without the hook. */
export const crashPointInterceptors: ActivityInterceptorsFactory[] = hook
  ? [
      (ctx) => {
        const inbound: ActivityInboundCallsInterceptor = {
          async execute(input, next) {
            const result: unknown = await next(input);
            hook(`${ctx.info.activityType}.reply` as CrashPointName, 'before');
            return result;
          },
        };
        return { inbound };
      },
    ]
  : [];
