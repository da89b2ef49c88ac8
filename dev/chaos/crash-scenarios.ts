import type { CrashArm } from '../../harness/hooks/worker-hook';
import type { OrderExpectation, ScenarioSpec } from './crash-scenario-spec';

/**
 * The scenarios the enumerated crash run judges the points under, as data: what each sets up,
 * which points it reaches, and what must be counted at the end whatever the crash. A point is run
 * under every scenario that reaches it. Reach is declared here and checked by every run: the
 * worker hook reports each point the scenario's workflows pass, and a point passed that its
 * scenario does not declare fails the row (as does a declared point that is never reached). A new
 * scenario is one entry here (its vocabulary: crash-scenario-spec.ts) plus its setup in
 * crash-order-rows.ts or crash-job-rows.ts.
 */

/** What every order scenario pays (minor units); a full refund gives back as much. */
export const AMOUNT = 5400;

const fulfilled = {
  payments: 1,
  shipments: 1,
  mails: 1,
  ledger: 1,
  alerts: 0,
  failedRuns: 0,
  invoice: true,
  refundReview: false,
  shipmentStatus: 'requested',
} as const satisfies OrderExpectation;

/** Fulfilled by the retry; the failed run stays listed beside the new one, and its alert. */
const retried = {
  ...fulfilled,
  alerts: 1,
  failedRuns: 1,
  gaveUp: 'non_retryable',
} as const satisfies OrderExpectation;

const refused = {
  payments: 1,
  shipments: 0,
  mails: 0,
  ledger: 0,
  alerts: 1,
  failedRuns: 1,
  invoice: false,
  refundReview: false,
  shipmentStatus: 'failed',
  gaveUp: 'non_retryable',
} as const satisfies OrderExpectation;

/** Every order scenario: the payment's steps, and the order run's check and mark of its event. */
const PAYMENT = [
  'recordPayment',
  'handOverToOrder',
  'orderEventHandledBy',
  'markOrderEventHandled',
] as const;
/** A first payment's fulfilment: the order's refunds added up, then the warehouse and its status. */
const FULFIL = ['applyRefunds', 'notifyWarehouse', 'setShipmentStatus'] as const;
/** A payment that fulfils its order: the warehouse, the confirmation, the points, the invoice. */
const PAID_AND_FULFILLED = [
  ...PAYMENT,
  ...FULFIL,
  'sendOrderConfirmation',
  'awardLoyaltyPoints',
  'generateInvoicePdf',
] as const;
/**
 * A failed run's alert: reported to its cause's digest, which posts "opened" (the order's one
 * alert), checks whether the run was retried, and posts "resolved" (about no order) when quiet.
 */
const FAILURE_ALERT = ['reportFailure', 'stillFailedRuns', 'deliverAlert'] as const;
/**
 * A full refund of an order paid and handed to the warehouse: the order run's check and mark of
 * the refund event, the refund recorded and applied, the shipment's cancel asked for.
 */
const REFUND_OF_FULFILLED = [
  'orderEventHandledBy',
  'markOrderEventHandled',
  'recordRefund',
  'handOverRefundToOrder',
  'applyRefunds',
  'cancelShipment',
] as const;
/** How `ops retry` resets one failed run: it finds the run's failure, resets, reads the new run. */
const RETRY_ONE = [
  'DescribeWorkflowExecution',
  'GetWorkflowExecutionHistory',
  'ResetWorkflowExecution',
  'DescribeWorkflowExecution',
] as const;
/** How `ops retry` follows the run its reset started: its latest run, then its result. */
const FOLLOW = ['DescribeWorkflowExecution', 'GetWorkflowExecutionHistory'] as const;
/** A warehouse that does not take the order: the notification fails inside its effect. */
const WAREHOUSE_FAILS: readonly CrashArm[] = [
  'notifyWarehouse.request@after',
  'notifyWarehouse.reply@before',
];
/**
 * A warehouse that takes the order at once, or refuses it for good: no attempt is retried, so
 * none tells its workflow (the Web UI's current details) that it will be.
 */
const NO_WAREHOUSE_RETRY: readonly CrashArm[] = [
  'notifyWarehouse.signal@before',
  'notifyWarehouse.signal@after',
];

export const SCENARIOS = {
  payment: {
    kind: 'order',
    description: 'one payment; the warehouse takes the order',
    warehouse: 'ok',
    activities: PAID_AND_FULFILLED,
    unreached: NO_WAREHOUSE_RETRY,
    expected: fulfilled,
  },
  'thin-event': {
    kind: 'order',
    description:
      'a Stripe thin v1.payment_intent.succeeded: its PaymentIntent fetched from the API double, then paid and fulfilled once',
    thin: true,
    warehouse: 'ok',
    activities: ['fetchThinEventObject', 'deliverThinEvent', ...PAID_AND_FULFILLED],
    unreached: NO_WAREHOUSE_RETRY,
    expected: fulfilled,
  },
  'double-charge': {
    kind: 'order',
    description: 'a second payment of an order already paid and fulfilled',
    paidBefore: true,
    warehouse: 'ok',
    activities: [...PAYMENT, 'requestRefundReview', 'deliverAlert'],
    expected: { ...fulfilled, payments: 2, alerts: 1, refundReview: true },
  },
  'refund-before-shipment': {
    kind: 'order',
    description:
      'a full refund delivered and applied before its payment; the payment then finds the order refunded in full: nothing ships, nothing awarded',
    refund: 'before-payment',
    warehouse: 'ok',
    activities: [...PAYMENT, 'recordRefund', 'handOverRefundToOrder', 'applyRefunds'],
    expected: {
      ...fulfilled,
      shipments: 0,
      mails: 0,
      ledger: 0,
      invoice: false,
      shipmentStatus: 'none',
      refunded: AMOUNT,
    },
  },
  'refund-cancels-shipment': {
    kind: 'order',
    description:
      'a full refund of an order paid and handed to the warehouse, not yet shipped: the shipment cancelled once, no review, the points taken back once',
    paidBefore: true,
    refund: 'after-shipment',
    warehouse: 'ok',
    // The first payment ran before the point was armed; the refund passes the order run's check.
    activities: [...REFUND_OF_FULFILLED, 'setShipmentStatus', 'reverseLoyaltyPoints'],
    expected: {
      ...fulfilled,
      ledger: 2,
      refunded: AMOUNT,
      shipmentStatus: 'cancelled',
      warehouseShipment: 'cancelled',
    },
  },
  'refund-after-shipment': {
    kind: 'order',
    description:
      'a full refund of an order the warehouse already shipped: the cancel answered already_shipped, a return review, one alert, the points taken back once',
    paidBefore: true,
    shippedBefore: true,
    refund: 'after-shipment',
    warehouse: 'ok',
    activities: [
      ...REFUND_OF_FULFILLED,
      'requestReturnReview',
      'deliverAlert',
      'reverseLoyaltyPoints',
    ],
    expected: {
      ...fulfilled,
      ledger: 2,
      alerts: 1,
      refunded: AMOUNT,
      returnReview: true,
      warehouseShipment: 'shipped',
    },
  },
  dispute: {
    kind: 'order',
    description:
      'a dispute of an order paid and fulfilled, opened then lost: each event recorded once, one alert, the order ends lost',
    paidBefore: true,
    dispute: 'after-shipment',
    warehouse: 'ok',
    activities: [
      'orderEventHandledBy',
      'markOrderEventHandled',
      'recordDispute',
      'handOverDisputeToOrder',
      'applyDisputes',
      'deliverAlert',
    ],
    expected: { ...fulfilled, alerts: 1, disputeStatus: 'lost' },
  },
  'warehouse-rejects': {
    kind: 'order',
    description: 'the warehouse answers 400: given up at once, compensated, one alert',
    warehouse: 'rejects',
    // Before compensating, the order run reads whether the warehouse is paused (it is not).
    activities: [...PAYMENT, ...FULFIL, 'partnerPauseState', ...FAILURE_ALERT],
    unreached: [...WAREHOUSE_FAILS, ...NO_WAREHOUSE_RETRY],
    expected: refused,
  },
  'warehouse-down': {
    kind: 'order',
    description:
      'the warehouse answers 503 until the retry deadline (shortened to 20 s): compensated once, one alert',
    warehouse: 'down',
    activities: [...PAYMENT, ...FULFIL, 'partnerPauseState', ...FAILURE_ALERT],
    unreached: WAREHOUSE_FAILS,
    expected: { ...refused, gaveUp: 'deadline' },
  },
  'unknown-order': {
    kind: 'unknown-order',
    description:
      'a payment for an order that does not exist: kept once in the unmatched inbox (one delivery, told created), no payment, the run completed',
    activities: ['recordPayment'],
  },
  'partner-pause': {
    kind: 'order',
    description:
      'the warehouse paused by an operator: the order is held (no call, no attempt spent), then resumed at 1/s and fulfilled once, no alert',
    warehouse: 'paused',
    activities: [...PAID_AND_FULFILLED, 'partnerPauseState', 'claimPartnerRelease'],
    // The held call fails with PartnerPaused before it calls; the released one succeeds.
    unreached: NO_WAREHOUSE_RETRY,
    expected: fulfilled,
  },
  export: {
    kind: 'export',
    description: 'an export of every order in two chunks or more',
    activities: ['planOrderExport', 'exportOrdersChunk', 'finishOrderExport'],
  },
  stock: {
    kind: 'stock',
    description: 'a stock aggregation for its own slot',
    activities: ['aggregateStock'],
  },
  sla: {
    kind: 'sla',
    description:
      'a paid order never handed over: an SLA check opens the incident, a check after the hand-over resolves it',
    activities: ['findSlaBreaches', 'reportSlaCheck', 'deliverAlert'],
  },
  'ops-retry': {
    kind: 'operator',
    description:
      'an order failed (warehouse 400); `npm run ops -- retry order-<id>` killed after a server call, then run again',
    action: 'retry',
    calls: ['GetSystemInfo', ...RETRY_ONE],
    // It follows the new run (--wait) until it closes, then reads its result.
    polls: FOLLOW,
    expected: retried,
  },
  'ops-retry-all': {
    kind: 'operator',
    description: 'the same with `npm run ops -- retry all` (the only failed workflow)',
    action: 'retry all',
    calls: ['GetSystemInfo', 'ListWorkflowExecutions', ...RETRY_ONE],
    polls: FOLLOW,
    expected: retried,
  },
  'ops-flush': {
    kind: 'operator',
    description:
      'an order failed (warehouse 400); `npm run ops -- flush --yes` killed after a server call, then run again',
    action: 'flush',
    calls: [
      'GetSystemInfo',
      'ListWorkflowExecutions',
      'DescribeWorkflowExecution',
      'GetWorkflowExecutionHistory',
      'DescribeWorkflowExecution',
      'DeleteWorkflowExecution',
      'DescribeWorkflowExecution',
    ],
    polls: ['DescribeWorkflowExecution'],
    // Deleted: nothing lists it any more; what it did (the payment, the alert) stays.
    expected: { ...refused, failedRuns: 0, gaveUp: undefined },
  },
  migration: {
    kind: 'migration',
    description:
      '`npm run migrate` on a fresh database, SIGKILLed between two statements of a migration (harness/migrations/points.ts), then run again: it finishes, and the schema is a clean migration’s',
  },
} as const satisfies Record<string, ScenarioSpec>;

export type Scenario = keyof typeof SCENARIOS;

export function scenarioSpec(scenario: Scenario): ScenarioSpec {
  return SCENARIOS[scenario];
}
