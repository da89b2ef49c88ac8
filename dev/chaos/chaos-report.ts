import type { Verdict } from './invariants';
import type { ChaosOptions } from './options';
import { emptyDeliveryStats, type DeliveryStats } from './provider';
import type { ChaosPoint } from '../../harness/hooks/worker-hook';

/** What a chaos run reports (dev/chaos/table.ts renders it), from its start to its verdict. */

export type KillKind = 'random' | ChaosPoint;

export interface WorkerKill {
  kind: KillKind;
  at: number;
  worker: string;
  pid: number;
  eventId?: string;
  orderId?: number;
  workflowId?: string;
  activityType?: string;
  attempt?: number;
}

/** What became of a payment whose worker was killed right after its row committed. */
export interface CommitWindowOutcome {
  eventId: string;
  orderId: number | undefined;
  killedAttempt: number | undefined;
  /** The attempt recorded as completed in the history. */
  completedAttempt: number | undefined;
  /**
   * The kill hit the window when another worker's completion was recorded: the killed one had
   * committed the row and never reported it. (Attempt numbers cannot tell for a local activity:
   * the worker that takes over counts its attempts afresh.)
   */
  hit: boolean;
  /** What the workflow concluded: did it still hand the payment over to fulfilment? */
  created: boolean | undefined;
  shipped: boolean;
}

/** A payment row committed by an attempt whose completion never reached Temporal. */
export interface UnreportedCommit {
  eventId: string;
  orderId: number;
  /** Seconds since the storm began when the row was written. */
  committedAtS: number | undefined;
  completedAttempt: number | undefined;
  previousAttemptFailure: string | undefined;
  /** The first disruption at or after the commit (within 15 s): the likely cause. */
  cause: string | undefined;
}

export interface ChaosReport {
  options: ChaosOptions;
  runDir: string;
  startedAt: number;
  /** When the first webhook went out: the origin of the times in the report. */
  stormStartedAt: number | undefined;
  durationMs: number;
  events: number;
  orders: number;
  doubleChargedOrders: number;
  /** Heavy (invoice) workers run: 0 when the system has none. */
  heavyWorkers: number;
  deliveries: DeliveryStats;
  kills: WorkerKill[];
  /** Worker freezes at an armed moment that no SIGKILL followed (the driver was too slow). */
  holdsReleased: number;
  armedNotTriggered: Record<ChaosPoint, number>;
  serverRestarts: Array<{ at: number; downMs: number; readyAfterMs: number }>;
  dbOutages: Array<{ at: number; downMs: number }>;
  /** Skipped chaos actions (e.g. no worker was running to kill). */
  skipped: string[];
  workerStarts: number;
  /** Every process the run started (all gone by the time the report is returned). */
  pids: number[];
  unexpectedExits: Array<{
    process: string;
    /** Seconds since the storm began (negative: during start-up). */
    atS: number;
    code: number | null;
    signal: string | null;
    reason: string | undefined;
  }>;
  commitWindow: CommitWindowOutcome[];
  /** Payment workflows whose recordPayment needed more than one attempt (any cause). */
  recordPaymentRetried: number;
  /** recordPayment retries by the failure that caused them (as the history kept the last one). */
  recordPaymentRetryCauses: Record<string, number>;
  /**
   * Payment workflows that ended `created: false` although no other execution existed for
   * their event: an earlier attempt of their own committed the row and never reported it.
   */
  unreportedCommits: UnreportedCommit[];
  /** Temporary files of atomic invoice writes that a killed attempt left behind. */
  strayTempFiles: number;
  converged: boolean;
  convergenceMs: number;
  verdict: Verdict | undefined;
  /** Why the run could not be judged (set up failed, aborted…). */
  error: string | undefined;
}

export function emptyReport(options: ChaosOptions, runDir: string, startedAt: number): ChaosReport {
  return {
    options,
    runDir,
    startedAt,
    stormStartedAt: undefined,
    durationMs: 0,
    events: options.events,
    orders: 0,
    doubleChargedOrders: 0,
    heavyWorkers: 0,
    deliveries: emptyDeliveryStats(),
    kills: [],
    holdsReleased: 0,
    armedNotTriggered: { 'payment-commit': 0, 'warehouse-201': 0, 'mail-stamp': 0 },
    serverRestarts: [],
    dbOutages: [],
    skipped: [],
    workerStarts: 0,
    pids: [],
    unexpectedExits: [],
    commitWindow: [],
    recordPaymentRetried: 0,
    recordPaymentRetryCauses: {},
    unreportedCommits: [],
    strayTempFiles: 0,
    converged: false,
    convergenceMs: 0,
    verdict: undefined,
    error: undefined,
  };
}
