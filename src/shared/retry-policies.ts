import type { ActivityOptions } from '@temporalio/common';
import { NON_RETRYABLE_FAILURE_TYPES } from './errors';

/**
 * How every activity of the order-payment flow is retried: one named preset per kind of call,
 * read by the workflows' `proxyActivities` and applied by the Temporal server, which schedules
 * each attempt. The server's view is what the Web UI's Pending Activities tab and
 * `temporal activity pause|reset|update-options` act on, and since these numbers are not
 * workflow logic, tuning them never breaks the replay of runs in flight
 * (test/replay: "retuned retry policies").
 *
 * The seed's attributes map onto the policy as follows:
 * - `#[Tries(n)]`          → `retry.maximumAttempts`
 * - `#[Backoff([...])]`    → `retry.initialInterval`/`backoffCoefficient`/`maximumInterval`, and the
 *                             exact list through `nextRetryDelay` (see `retryDelayAfterAttempt`)
 * - `retryUntil()`         → `scheduleToCloseTimeout`: the server starts no attempt that could
 *                             not begin before it
 * - `#[MaxExceptions(n)]`  → a count carried in heartbeat details across attempts (alert delivery)
 * - 400 / 429 / 5xx        → `nonRetryableErrorTypes`, and `nextRetryDelay` from `Retry-After`
 * - job `timeout`          → `startToCloseTimeout`, and `heartbeatTimeout` for calls that wait
 */

const nonRetryableErrorTypes = [...NON_RETRYABLE_FAILURE_TYPES];

/**
 * The seed's `#[Backoff([10, 30, 120])]` for the warehouse: waits after attempt 1, 2, 3…; the
 * last one repeats. The activity hands them to the server as `nextRetryDelay`.
 */
// Stryker disable next-line all: a module-level value, set before any test runs, so no test can
// be told apart as covering it; test/shared/retry-policies.test.ts asserts the 10/30/120 s waits.
export const WAREHOUSE_BACKOFF_SECONDS: readonly number[] = [10, 30, 120];

/** A 429 without a readable Retry-After waits this long (the warehouse did not say). */
export const WAREHOUSE_RATE_LIMIT_FALLBACK_SECONDS = 30;

/** A rate-limited alert sink that does not say how long to wait is tried again after this. */
export const ALERT_RATE_LIMIT_FALLBACK_SECONDS = 10;

/** `#[MaxExceptions(3)]` of alert delivery: real failures (not rate limits) that end it. */
export const ALERT_MAX_EXCEPTIONS = 3;

/** The wait after the given failed attempt (1-based) in a `Backoff` list: the last value repeats. */
export function retryDelayAfterAttempt(schedule: readonly number[], attempt: number): number {
  if (schedule.length === 0) return 0;
  return schedule[Math.min(Math.max(attempt, 1), schedule.length) - 1]!;
}

/**
 * The short steps that run as local activities (database steps, the hand-over: see
 * src/workflows/payment.ts) take the same presets as when they ran as activities; the SDK applies
 * the policy inside the worker instead of the server. A retry whose wait is at most this long
 * waits in the worker, within the workflow task (1, 2, 4 and 8 s of `databaseStep`: a blip of
 * the database or the frontend costs no history); a longer one becomes a durable timer in the
 * history, so a long outage survives a worker restart, stays visible in the Web UI as the timer
 * and the next workflow task, and does not keep a workflow task heartbeating for hours. The SDK's
 * default (1 minute) is `databaseStep`'s maximum interval: its retries would never leave the
 * worker.
 */
// Stryker disable next-line all: a module-level value (see WAREHOUSE_BACKOFF_SECONDS), asserted
// by test/shared/retry-policies.test.ts.
export const LOCAL_RETRY_THRESHOLD = '10 seconds';

/** A short call retried for up to a day: see `databaseStep` and `temporalCall` below. */
const dayLongStep = {
  startToCloseTimeout: '10 seconds',
  scheduleToCloseTimeout: '24 hours',
  retry: {
    maximumAttempts: Number.POSITIVE_INFINITY, // the day-long deadline bounds it
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    nonRetryableErrorTypes,
  },
} satisfies ActivityOptions;

export const RetryPolicies = {
  /**
   * Short database steps (record the payment, shipment status, refund flag, loyalty points). A
   * healthy call takes milliseconds and the database abandons a statement after 5 s, so 10 s
   * start-to-close means the attempt is lost. Attempts are unlimited within a day: a payment is
   * not dropped because the database was down for an hour; each step is idempotent, and
   * `npm run ops -- stuck` shows a long outage. After a day the run fails, alerts, and waits for
   * `ops retry`: an outage that long has people on it.
   */
  databaseStep: dayLongStep,

  /**
   * The hand-over to the order's workflow (signal-with-start on the worker's own Temporal
   * connection). Same bounds as a database step: the Temporal frontend this worker polls is
   * rarely the thing that is down, and the order workflow ignores a repeated event.
   */
  temporalCall: dayLongStep,

  /**
   * The warehouse notification: `#[Tries(5)]`, `#[Backoff([10, 30, 120])]`, `retryUntil(+30 min)`.
   * The activity sets the exact waits (10, 30, 120, 120 s) and a 429's Retry-After through
   * `nextRetryDelay`; the policy's own backoff (10, 30, 90, 120 s) applies to attempts that end in
   * a crash or a timeout, which cannot choose their delay. The HTTP client gives up after
   * WAREHOUSE_TIMEOUT_MS (at most 7 s); 8 s start-to-close abandons a worker that hangs beyond
   * that and stays below the first 10 s wait, so attempts never overlap. The activity heartbeats
   * every second, so a crashed worker is noticed after 3 s.
   */
  warehouseNotification: {
    startToCloseTimeout: '8 seconds',
    heartbeatTimeout: '3 seconds',
    scheduleToCloseTimeout: '30 minutes',
    retry: {
      maximumAttempts: 5,
      initialInterval: `${WAREHOUSE_BACKOFF_SECONDS[0]} seconds`,
      backoffCoefficient: 3,
      maximumInterval: `${WAREHOUSE_BACKOFF_SECONDS.at(-1)} seconds`,
      nonRetryableErrorTypes,
    },
  },

  /**
   * The cancel of a shipment after a full refund. It races the warehouse's pick-and-pack: every
   * minute it waits makes `already_shipped` likelier, and a cancel that cannot get through soon
   * is better handed to a person (a return review, one alert) than retried for half an hour like
   * the shipment request. So 5 attempts, 2 s doubling to 30 s, within 5 minutes; a 429 waits its
   * Retry-After (`nextRetryDelay`). The call is one short HTTP request: the client gives up after
   * WAREHOUSE_TIMEOUT_MS (at most 7 s) and 8 s start-to-close catches a hung worker, so it needs
   * no heartbeat. 404 and 422 are non-retryable (WarehouseRejected): no retry makes them right.
   */
  warehouseCancellation: {
    startToCloseTimeout: '8 seconds',
    scheduleToCloseTimeout: '5 minutes',
    retry: {
      maximumAttempts: 5,
      initialInterval: '2 seconds',
      backoffCoefficient: 2,
      maximumInterval: '30 seconds',
      nonRetryableErrorTypes,
    },
  },

  /**
   * The confirmation mail. A send gives up after 8 s (3 s per SMTP step), so 15 s start-to-close
   * only catches a hung worker. A mail server that is down is retried for about an hour (10
   * attempts, 10 s doubling to 10 min); a permanent 5xx refusal is not retried. The two-hour
   * deadline is a backstop that the attempts reach first.
   */
  confirmationMail: {
    startToCloseTimeout: '15 seconds',
    scheduleToCloseTimeout: '2 hours',
    retry: {
      maximumAttempts: 10,
      initialInterval: '10 seconds',
      backoffCoefficient: 2,
      maximumInterval: '10 minutes',
      nonRetryableErrorTypes,
    },
  },

  /**
   * Alert delivery to a chat webhook: `#[Tries(25)]` + `#[MaxExceptions(3)]`, within an hour.
   * Chat webhooks rate-limit bursts of alerts, so up to 25 tries; a 429 waits its Retry-After
   * (`nextRetryDelay`, a benign failure), while the third real failure ends the delivery (the
   * activity counts them in its heartbeat details), the alert staying in the logs. Chat webhooks
   * answer in well under a second; 10 s start-to-close means the sink is in trouble.
   */
  alertDelivery: {
    startToCloseTimeout: '10 seconds',
    scheduleToCloseTimeout: '1 hour',
    retry: {
      maximumAttempts: 25,
      initialInterval: '5 seconds',
      backoffCoefficient: 3,
      maximumInterval: '1 minute',
      nonRetryableErrorTypes,
    },
  },
} as const satisfies Record<string, ActivityOptions>;
