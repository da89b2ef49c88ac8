import { defineSearchAttributeKey } from '@temporalio/common';

// Registered on the server before a workflow may set them: `npm start` does it on the dev
// server; on a cluster `ops doctor` prints the command for the missing ones.
export const OrderIdSearchAttribute = defineSearchAttributeKey('OrderId', 'INT');
export const PaymentEventIdSearchAttribute = defineSearchAttributeKey('PaymentEventId', 'KEYWORD');
/** Set while an order workflow waits for a paused partner: `ops partner resume` finds them. */
export const PartnerPausedSearchAttribute = defineSearchAttributeKey('PartnerPaused', 'KEYWORD');

export const CUSTOM_SEARCH_ATTRIBUTES = [
  OrderIdSearchAttribute,
  PaymentEventIdSearchAttribute,
  PartnerPausedSearchAttribute,
] as const;
