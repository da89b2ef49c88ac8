import type { ActivityOptions } from '@temporalio/workflow';
import { NON_RETRYABLE_FAILURE_TYPES } from '../shared/errors';

/**
 * Database and Temporal calls from workflows. A healthy call takes milliseconds and the
 * database abandons a statement after 5 s (busy_timeout / statement_timeout), so 10 s means the
 * attempt is lost and the server may retry it. Attempts are unlimited: a payment must not be
 * dropped because the database was down for an hour; each attempt is idempotent, and
 * `npm run ops -- stuck` shows long outages.
 */
export const databaseCall: ActivityOptions = {
  startToCloseTimeout: '10 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '1 minute',
    nonRetryableErrorTypes: [...NON_RETRYABLE_FAILURE_TYPES],
  },
};
