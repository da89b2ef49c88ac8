import type { CrashArm } from '../../harness/hooks/worker-hook';

/**
 * What a crash scenario declares (dev/chaos/crash-scenarios.ts holds the scenarios): what it sets
 * up, which activities its workflows run, and what is counted at the end whatever the crash.
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
