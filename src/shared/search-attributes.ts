import { defineSearchAttributeKey } from '@temporalio/common';

/**
 * Custom search attributes: what operators filter workflows by in the Web UI and the CLI
 * (`OrderId = 12`). They must be registered on the server before a workflow may set them:
 * `npm start` registers them on the embedded dev server; on a cluster, `npm run ops -- doctor` checks
 * them and prints the command that registers the missing ones.
 */
export const OrderIdSearchAttribute = defineSearchAttributeKey('OrderId', 'INT');
export const PaymentEventIdSearchAttribute = defineSearchAttributeKey('PaymentEventId', 'KEYWORD');
/**
 * Set on an order workflow while it waits for a paused partner (`PartnerPaused = 'warehouse'`):
 * `ops partner resume` signals the workflows it finds, `ops stuck` groups them.
 */
export const PartnerPausedSearchAttribute = defineSearchAttributeKey('PartnerPaused', 'KEYWORD');

/** Every custom search attribute, with its type as the server names it. */
export const CUSTOM_SEARCH_ATTRIBUTES = [
  OrderIdSearchAttribute,
  PaymentEventIdSearchAttribute,
  PartnerPausedSearchAttribute,
] as const;
