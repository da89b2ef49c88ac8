/**
 * Failure types, the one place where they are named. They are thrown as
 * `ApplicationFailure.create({ type, nonRetryable, ... })` by activities and matched by type in
 * workflows, retry policies and tests. Matching is by these strings, never by class names.
 */
export const FailureType = {
  /** The order named by a payment does not exist: retrying cannot make it appear. */
  OrderNotFound: 'OrderNotFound',
  /** The same provider event ID arrived with a different order or amount. */
  PaymentEventConflict: 'PaymentEventConflict',
  /** The warehouse rejected the request (4xx other than 408/429): the request itself is wrong. */
  WarehouseRejected: 'WarehouseRejected',
  /** The warehouse is unavailable (5xx, timeout, network): worth retrying. */
  WarehouseUnavailable: 'WarehouseUnavailable',
  /** The warehouse asked us to slow down (429): retry after the time it names. */
  WarehouseRateLimited: 'WarehouseRateLimited',
} as const;

export type FailureType = (typeof FailureType)[keyof typeof FailureType];

/** Failure types that no retry can fix; listed in retry policies as `nonRetryableErrorTypes`. */
export const NON_RETRYABLE_FAILURE_TYPES: readonly FailureType[] = [
  FailureType.OrderNotFound,
  FailureType.PaymentEventConflict,
  FailureType.WarehouseRejected,
];
