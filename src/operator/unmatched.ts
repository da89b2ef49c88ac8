import { z } from 'zod';
import { MAX_INTEGER_COLUMN, type UnmatchedDelivery, type UnmatchedRepository } from '../db';
import type { PaymentWorkflowInput } from '../shared/payment';
import type { PaymentStarter, StartedPayment } from '../temporal/payment-starter';

// Each inbox entry is resolved once: attached to an order (then a normal payment), refunded
// outside this system, or dismissed with a reason.

/** The internal payment event an entry kept, if any; refunds, disputes, raw objects have none. */
const keptPayment = z.object({
  amount: z.number().int().positive().max(MAX_INTEGER_COLUMN),
  paymentRef: z.string().min(1).optional(),
  currency: z.string().optional(),
  kind: z.undefined({ message: 'is a refund, not a payment' }).optional(),
  disputeId: z.undefined({ message: 'is a dispute, not a payment' }).optional(),
});

/** The event ID an attached entry's payment is recorded under: stable, so a re-run starts nothing. */
export function attachedEventId(entry: Pick<UnmatchedDelivery, 'id'>): string {
  return `unmatched~${entry.id}`;
}

export type AttachResult =
  /** The payment workflow was started (or found started by an earlier run of the command). */
  | { kind: 'attached'; entry: UnmatchedDelivery; started: StartedPayment; first: boolean }
  | { kind: 'refused'; reason: string };

export interface AttachDeps {
  inbox: Pick<UnmatchedRepository, 'get' | 'resolve'>;
  payments: PaymentStarter;
  /** SHOP_CURRENCY: a payment in another currency cannot pay an order's total. */
  shopCurrency: string;
}

/** Claimed in the inbox first (one operator wins); a rerun starts the same, deduplicated ID. */
export async function attachUnmatched(
  deps: AttachDeps,
  id: number,
  orderId: number,
  note?: string,
): Promise<AttachResult> {
  const entry = await deps.inbox.get(id);
  if (!entry) return { kind: 'refused', reason: `no unmatched entry ${id}` };
  const resolution = entry.resolution;
  if (resolution && (resolution.kind !== 'attached' || resolution.orderId !== orderId)) {
    return { kind: 'refused', reason: `entry ${id} is already ${describeResolution(resolution)}` };
  }
  const payment = keptPayment.safeParse(entry.payload);
  if (!payment.success) {
    const problem = payment.error.issues.map((i) => `${i.path.join('.')} ${i.message}`);
    return {
      kind: 'refused',
      reason: `entry ${id} is not a payment that can pay an order (${problem.join('; ')}): mark it refunded or dismiss it`,
    };
  }
  const { amount, paymentRef, currency } = payment.data;
  if (currency !== undefined && currency !== deps.shopCurrency) {
    return {
      kind: 'refused',
      reason: `entry ${id} is a payment in ${currency.toUpperCase()}; orders are in ${deps.shopCurrency.toUpperCase()}: refund it outside and mark it refunded, or dismiss it`,
    };
  }

  let attached = entry;
  let first = false;
  if (!resolution) {
    const claimed = await deps.inbox.resolve(id, { kind: 'attached', orderId, note });
    if (claimed.kind === 'order_not_found') {
      return { kind: 'refused', reason: `order ${orderId} does not exist` };
    }
    if (claimed.kind === 'not_found')
      return { kind: 'refused', reason: `no unmatched entry ${id}` };
    const now = claimed.delivery.resolution;
    if (
      claimed.kind === 'already_resolved' &&
      (now?.kind !== 'attached' || now.orderId !== orderId)
    ) {
      // Another operator resolved it in the meantime, otherwise.
      return { kind: 'refused', reason: `entry ${id} is already ${describeResolution(now)}` };
    }
    attached = claimed.delivery;
    first = claimed.kind === 'resolved';
  }
  const input: PaymentWorkflowInput = {
    eventId: attachedEventId(entry),
    orderId,
    amount,
    ...(paymentRef === undefined ? {} : { paymentRef }),
    ...(currency === undefined ? {} : { currency }),
  };
  const started = await deps.payments.start(input);
  return { kind: 'attached', entry: attached, started, first };
}

export type CloseResult =
  { kind: 'resolved'; entry: UnmatchedDelivery } | { kind: 'refused'; reason: string };

/** Marks an entry refunded outside this system, or dismisses it: once, and for good. */
export async function closeUnmatched(
  inbox: Pick<UnmatchedRepository, 'resolve'>,
  id: number,
  resolution: { kind: 'refunded_outside'; note?: string } | { kind: 'dismissed'; note: string },
): Promise<CloseResult> {
  const result = await inbox.resolve(id, resolution);
  switch (result.kind) {
    case 'resolved':
      return { kind: 'resolved', entry: result.delivery };
    case 'already_resolved':
      return {
        kind: 'refused',
        reason: `entry ${id} is already ${describeResolution(result.delivery.resolution)}`,
      };
    default:
      return { kind: 'refused', reason: `no unmatched entry ${id}` };
  }
}

export function describeResolution(resolution: UnmatchedDelivery['resolution']): string {
  if (!resolution) return 'open';
  const note = resolution.note ? ` (${resolution.note})` : '';
  const at = resolution.resolvedAt.replace(/\.\d{3}Z$/, 'Z');
  switch (resolution.kind) {
    case 'attached':
      return `attached to order ${resolution.orderId} at ${at}${note}`;
    case 'refunded_outside':
      return `marked refunded outside at ${at}${note}`;
    case 'dismissed':
      return `dismissed at ${at}${note}`;
  }
}
