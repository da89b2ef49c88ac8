/**
 * Failure types, the one place where they are named. They are thrown as
 * `ApplicationFailure.create({ type, nonRetryable, ... })` by activities and workflows and
 * matched by type in workflows, retry budgets, alerts and tests. Matching is by these strings,
 * never by class names.
 */
export const FailureType = {
  /**
   * The order an order step acts on does not exist: retrying cannot make it appear. (A payment
   * for an unknown order is kept in the unmatched inbox instead, not failed.)
   */
  OrderNotFound: 'OrderNotFound',
  /** The same provider event ID arrived with a different order or amount. */
  PaymentEventConflict: 'PaymentEventConflict',
  /** The warehouse rejected the request (4xx other than 408/429): the request itself is wrong. */
  WarehouseRejected: 'WarehouseRejected',
  /** The warehouse is unavailable (5xx, 408, timeout, network): worth retrying. */
  WarehouseUnavailable: 'WarehouseUnavailable',
  /** The warehouse asked us to slow down (429): retry after the time it names. */
  WarehouseRateLimited: 'WarehouseRateLimited',
  /** The alert sink refused the alert (4xx other than 408/429). */
  AlertSinkRejected: 'AlertSinkRejected',
  /** The alert sink is unavailable (5xx, 408, timeout, network). */
  AlertSinkUnavailable: 'AlertSinkUnavailable',
  /** The alert sink asked us to slow down (429). */
  AlertSinkRateLimited: 'AlertSinkRateLimited',
  /**
   * Alert delivery used up its MaxExceptions: three real failures across its attempts. The last
   * failure is its cause.
   */
  RetriesExhausted: 'RetriesExhausted',
  /** The order could not be handed to the warehouse; compensation ran (shipment_status = failed). */
  FulfilmentFailed: 'FulfilmentFailed',
  /** A step of one order event failed for good (its retry policy gave up); other events went on. */
  OrderEventFailed: 'OrderEventFailed',
  /** The mail server could not take the mail now (connection, timeout, 4xx reply): retry. */
  MailUnavailable: 'MailUnavailable',
  /** The mail server refused the mail for good (5xx reply), or it cannot be sent as built. */
  MailRejected: 'MailRejected',
  /** The invoice could not be written after its retries; the activity failure is its cause. */
  InvoiceFailed: 'InvoiceFailed',
  /** An export request cannot be served as given (bad export ID or range): no retry can fix it. */
  InvalidExportRequest: 'InvalidExportRequest',
  /** An export's chunk files do not add up (missing file, other row count): see the message. */
  ExportIncomplete: 'ExportIncomplete',
  /** A chunk of an export kept failing after its retries; the chunks before it stay written. */
  ExportFailed: 'ExportFailed',
  /**
   * The partner was paused by an operator (`ops partner pause`): the call was not made, or its
   * failure came while paused. The workflow waits for the resume and calls again with a fresh
   * retry budget; it is not a failed attempt, and never compensated.
   */
  PartnerPaused: 'PartnerPaused',
  /** Stripe's API refused a fetch (no key, bad key, no permission, no such object): no retry helps. */
  StripeApiRejected: 'StripeApiRejected',
} as const;

export type FailureType = (typeof FailureType)[keyof typeof FailureType];

/** Failure types that no retry can fix. */
export const NON_RETRYABLE_FAILURE_TYPES: readonly FailureType[] = [
  FailureType.OrderNotFound,
  FailureType.PaymentEventConflict,
  FailureType.WarehouseRejected,
  FailureType.AlertSinkRejected,
  FailureType.MailRejected,
  // Not for the server to retry: the workflow waits for the resume (src/workflows/partner-hold.ts).
  FailureType.PartnerPaused,
];

/** Details carried by rate-limit failures, so workflows can read the wait without parsing text. */
export interface RateLimitDetails {
  retryAfterMs?: number;
}
