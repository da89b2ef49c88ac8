import {
  CRASH_POINTS,
  type CrashPhase,
  type CrashPointName,
} from '../../src/activities/crash-points';
import { migrationPoints } from '../migrations/points';
import type { CrashArm } from './worker-hook';

/**
 * The scenarios the enumerated crash run judges the points under, as data: what each sets up,
 * which points it reaches, and what must be counted at the end whatever the crash. A point is run
 * under every scenario that reaches it. Reach is declared here and checked by every run: the
 * worker hook reports each point the scenario's workflows pass, and a point passed that its
 * scenario does not declare fails the row (as does a declared point that is never reached). A new
 * scenario (a refund after the shipment, say) is one entry here plus its trigger in
 * crash-points.ts.
 */

/** What is counted at the end of an order scenario (per order). */
export interface OrderExpectation {
  payments: number;
  shipments: number;
  /** Copies of the confirmation (one Message-ID). */
  mails: number;
  /** Loyalty ledger rows. */
  ledger: number;
  /** Alerts at the alert webhook about the order. */
  alerts: number;
  /** Failed runs of the order's workflow that visibility lists. */
  failedRuns: number;
  invoice: boolean;
  refundReview: boolean;
  /** `none`: nothing went to the warehouse (refunded in full before it was shipped). */
  shipmentStatus: 'requested' | 'failed' | 'cancelled' | 'none';
  /**
   * The order's shipment as the warehouse simulator holds it; unset: `requested` when one was
   * created (`shipments`), else `none`.
   */
  warehouseShipment?: 'requested' | 'shipped' | 'cancelled' | 'none';
  /** The order's refunded total, and whether it was flagged for a return review. */
  refunded?: number;
  returnReview?: boolean;
  /** The order's dispute_status at the end (absent: none). */
  disputeStatus?: 'opened' | 'won' | 'lost';
  /** Why the warehouse notification was given up, read from the failed run's failure. */
  gaveUp?: 'non_retryable' | 'deadline';
}

/**
 * What the warehouse simulator answers while the order is fulfilled; `paused`: it answers, but
 * an operator has paused it (`ops partner pause`) until the order is held, then resumes it at
 * 1 call per second.
 */
export type WarehouseSetup = 'ok' | 'rejects' | 'down' | 'paused';

/** The operator CLI commands (npm run ops -- …) a run interrupts after each server call. */
export type OperatorAction = 'retry' | 'retry all' | 'flush';

export type ScenarioSpec =
  | {
      kind: 'order';
      description: string;
      /** The order was paid and fulfilled before the point is armed: the trigger pays it again. */
      paidBefore?: boolean;
      /**
       * A full refund of the payment is delivered: `before-payment`, and the payment once the
       * refund's workflow closed (nothing must ship); `after-shipment`, instead of a second payment.
       */
      refund?: 'before-payment' | 'after-shipment';
      /** The warehouse shipped the first payment's parcel before the refund came (too late). */
      shippedBefore?: boolean;
      /** A dispute of the payment is delivered, opened then lost, instead of a second payment. */
      dispute?: 'after-shipment';
      /** The payment comes as a Stripe thin event, whose object the workers fetch. */
      thin?: boolean;
      warehouse: WarehouseSetup;
      /** The activities its workflows run: each of their points, but `unreached`, is run. */
      activities: readonly string[];
      /** Points of those activities it never passes (an effect that throws has no `after`). */
      unreached?: readonly CrashArm[];
      expected: OrderExpectation;
    }
  | {
      kind: 'operator';
      description: string;
      action: OperatorAction;
      /**
       * The server calls of one uninterrupted run over a single failed workflow, in order. The
       * CLI is killed after each one in turn; the runs check the calls against this list.
       */
      calls: readonly string[];
      /**
       * After the declared calls the command polls with these until the server is done (a retry
       * follows its new run, flush waits for the deletion): how many varies, so none is a row.
       */
      polls?: readonly string[];
      expected: OrderExpectation;
    }
  | {
      kind: 'export' | 'stock' | 'unknown-order' | 'sla';
      description: string;
      activities: readonly string[];
    }
  /** `npm run migrate` on a fresh database, killed between two statements of a migration. */
  | { kind: 'migration'; description: string };

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
/**
 * A failed run's alert: reported to its cause's digest, which posts "opened" (the order's one
 * alert), checks whether the run was retried, and posts "resolved" (about no order) when quiet.
 */
const FAILURE_ALERT = ['reportFailure', 'stillFailedRuns', 'deliverAlert'] as const;
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
    activities: [
      ...PAYMENT,
      ...FULFIL,
      'sendOrderConfirmation',
      'awardLoyaltyPoints',
      'generateInvoicePdf',
    ],
    unreached: NO_WAREHOUSE_RETRY,
    expected: fulfilled,
  },
  'thin-event': {
    kind: 'order',
    description:
      'a Stripe thin v1.payment_intent.succeeded: its PaymentIntent fetched from the API double, then paid and fulfilled once',
    thin: true,
    warehouse: 'ok',
    activities: [
      'fetchThinEventObject',
      'deliverThinEvent',
      ...PAYMENT,
      ...FULFIL,
      'sendOrderConfirmation',
      'awardLoyaltyPoints',
      'generateInvoicePdf',
    ],
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
    activities: [
      'orderEventHandledBy',
      'markOrderEventHandled',
      'recordRefund',
      'handOverRefundToOrder',
      'applyRefunds',
      'cancelShipment',
      'setShipmentStatus',
      'reverseLoyaltyPoints',
    ],
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
      'orderEventHandledBy',
      'markOrderEventHandled',
      'recordRefund',
      'handOverRefundToOrder',
      'applyRefunds',
      'cancelShipment',
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
    activities: [
      ...PAYMENT,
      ...FULFIL,
      'partnerPauseState',
      'claimPartnerRelease',
      'sendOrderConfirmation',
      'awardLoyaltyPoints',
      'generateInvoicePdf',
    ],
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
    calls: [
      'GetSystemInfo',
      'DescribeWorkflowExecution',
      'GetWorkflowExecutionHistory',
      'ResetWorkflowExecution',
      'DescribeWorkflowExecution',
    ],
    // It follows the new run (--wait) until it closes, then reads its result.
    polls: FOLLOW,
    // Fulfilled by the retry; the failed run stays listed beside the new one, and its alert.
    expected: { ...fulfilled, alerts: 1, failedRuns: 1, gaveUp: 'non_retryable' },
  },
  'ops-retry-all': {
    kind: 'operator',
    description: 'the same with `npm run ops -- retry all` (the only failed workflow)',
    action: 'retry all',
    calls: [
      'GetSystemInfo',
      'ListWorkflowExecutions',
      'DescribeWorkflowExecution',
      'GetWorkflowExecutionHistory',
      'ResetWorkflowExecution',
      'DescribeWorkflowExecution',
    ],
    polls: FOLLOW,
    expected: { ...fulfilled, alerts: 1, failedRuns: 1, gaveUp: 'non_retryable' },
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
      '`npm run migrate` on a fresh database, SIGKILLed between two statements of a migration (dev/migrations/points.ts), then run again: it finishes, and the schema is a clean migration’s',
  },
} as const satisfies Record<string, ScenarioSpec>;

export type Scenario = keyof typeof SCENARIOS;

export function scenarioSpec(scenario: Scenario): ScenarioSpec {
  return SCENARIOS[scenario];
}

export interface PointRun {
  /** A declared crash point, or for an operator action `<action> call <n>`. */
  point: string;
  phase: CrashPhase;
  scenario: Scenario;
  /** For an operator action: the server call after which the CLI dies (1-based). */
  call?: number;
}

/**
 * Every run of the matrix: each point under each scenario that reaches it, on each side; each
 * operator command after each server call; each migration between each two statements.
 */
export async function allPointRuns(): Promise<PointRun[]> {
  const declared = Object.keys(CRASH_POINTS) as CrashPointName[];
  const points = declared.flatMap((point) => {
    const { activity, kind } = CRASH_POINTS[point];
    const phases: CrashPhase[] = kind === 'reply' ? ['before'] : ['before', 'after'];
    const scenarios = scenariosReaching(activity);
    if (scenarios.length === 0) throw new Error(`no scenario reaches ${point} (${activity})`);
    return scenarios.flatMap((scenario) =>
      phases
        .filter((phase) => !unreached(scenario).includes(`${point}@${phase}`))
        .map((phase) => ({ point, phase, scenario })),
    );
  });
  const operator = (Object.keys(SCENARIOS) as Scenario[]).flatMap((scenario) => {
    const spec = scenarioSpec(scenario);
    if (spec.kind !== 'operator') return [];
    return spec.calls.map((method, i) => ({
      point: `${spec.action} call ${i + 1} ${method}`,
      phase: 'after' as const,
      scenario,
      call: i + 1,
    }));
  });
  const migrations = (await migrationPoints()).map((point) => ({
    point,
    phase: 'after' as const,
    scenario: 'migration' as const,
  }));
  return [...points, ...operator, ...migrations];
}

function scenariosReaching(activity: string): Scenario[] {
  return (Object.keys(SCENARIOS) as Scenario[]).filter((scenario) => {
    const spec = scenarioSpec(scenario);
    return 'activities' in spec && spec.activities.includes(activity);
  });
}

function unreached(scenario: Scenario): readonly string[] {
  const spec = scenarioSpec(scenario);
  return spec.kind === 'order' ? (spec.unreached ?? []) : [];
}

/** The points (with side) a scenario declares it passes: what its runs' traces may contain. */
export function declaredArms(scenario: Scenario): Set<string> {
  const spec = scenarioSpec(scenario);
  if (!('activities' in spec)) return new Set();
  const arms = (Object.keys(CRASH_POINTS) as CrashPointName[])
    .filter((point) => spec.activities.includes(CRASH_POINTS[point].activity))
    .flatMap((point) => [`${point}@before`, `${point}@after`]);
  return new Set(arms.filter((arm) => !unreached(scenario).includes(arm)));
}

/** The points passed (with side) that the scenario does not declare, each once. */
export function undeclaredArms(scenario: Scenario, passed: readonly string[]): string[] {
  const declared = declaredArms(scenario);
  return [...new Set(passed)].filter((arm) => !declared.has(arm));
}

/**
 * A fixed-size share of the matrix that moves on with `rotation` (a day number, or a CI run
 * number): consecutive rotations take consecutive slices, so every row comes round.
 */
export function rotatingShare(
  runs: readonly PointRun[],
  size: number,
  rotation: number,
): PointRun[] {
  if (size >= runs.length) return [...runs];
  const start = (rotation * size) % runs.length;
  return Array.from({ length: size }, (_, i) => runs[(start + i) % runs.length]!);
}

/** The arm file of a run: `<point>@<side>`, or `call-<n>` for an operator action. */
export function armName(run: PointRun): string {
  return run.call === undefined ? `${run.point}@${run.phase}` : `call-${run.call}`;
}
