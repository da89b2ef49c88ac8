import type { Insertable, Kysely } from 'kysely';
import type { Database } from '../schema';
import type { HandledStamp } from './handled-stamp';

// The refund and dispute ledgers work alike: one row per provider event (UNIQUE
// provider_event_id), matched to its order through the payment with its reference, else the
// order the event names, else parked with no order until that payment is recorded and claims it.

export interface RecordEventResult {
  /** This call inserted the event's row; false for a redelivery or a retry. */
  created: boolean;
  /** The order of the payment it concerns; null while that payment is not recorded. */
  orderId: number | null;
}

/** A ledger's repository; `handledBy`, `markHandled`: as PaymentsRepository's, for its events. */
export interface EventLedger<Event, Recorded> extends HandledStamp<string> {
  /**
   * Records an event once (UNIQUE provider_event_id), matched to its order through the payment
   * with its reference, else through the order it names, else kept with no order until its
   * payment is recorded (which claims it).
   */
  record(event: Event): Promise<RecordEventResult>;
  /** Every event recorded for the order, oldest first. */
  forOrder(orderId: number): Promise<Recorded[]>;
}

/** The event's identity in either ledger, as the provider named it. */
interface LedgerEvent {
  eventId: string;
  paymentRef: string;
  /** The order the event's metadata names, if any: used only when no payment has the reference. */
  orderId?: number;
}

/** `record` of either ledger: the event's row inserted once, then matched to its order. */
export async function recordInLedger<T extends 'refunds' | 'disputes'>(
  db: Kysely<Database>,
  table: T,
  event: LedgerEvent,
  row: Insertable<Database[T]>,
): Promise<RecordEventResult> {
  const inserted = await db
    .insertInto(table)
    .values(row)
    .onConflict((oc) => oc.column('provider_event_id').doNothing())
    .returning('id')
    .executeTakeFirst();
  return { created: inserted !== undefined, orderId: await matchToOrder(db, table, event) };
}

/**
 * Matches a recorded event's row to its order, if it has none yet, and returns the order the row
 * has now. Called after the event's insert (or its conflict) committed: a payment recorded
 * meanwhile claims the row from its side after its own commit (claimParked), so one of the two
 * always sees the other. A row once matched never moves to another order.
 */
export async function matchToOrder(
  db: Kysely<Database>,
  table: 'refunds' | 'disputes',
  event: LedgerEvent,
): Promise<number | null> {
  const orderId = await matchOrder(db, event);
  if (orderId !== null) {
    await db
      .updateTable(table)
      .set({ order_id: orderId })
      .where('provider_event_id', '=', event.eventId)
      .where('order_id', 'is', null)
      .execute();
  }
  const row = await db
    .selectFrom(table)
    .select('order_id')
    .where('provider_event_id', '=', event.eventId)
    .executeTakeFirstOrThrow();
  return row.order_id;
}

/** The order paid by the payment with this provider reference, if one is recorded. */
export async function orderOfPayment(
  db: Kysely<Database>,
  paymentRef: string,
): Promise<number | undefined> {
  const payment = await db
    .selectFrom('payments')
    .select('order_id')
    .where('provider_payment_ref', '=', paymentRef)
    .orderBy('id')
    .executeTakeFirst();
  return payment?.order_id;
}

/**
 * Gives the refunds and disputes recorded before their payment (no order yet) to the payment's
 * order, whose workflow applies them when it takes the payment.
 */
export async function claimParked(
  db: Kysely<Database>,
  paymentRef: string,
  orderId: number,
): Promise<void> {
  for (const table of ['refunds', 'disputes'] as const) {
    await db
      .updateTable(table)
      .set({ order_id: orderId })
      .where('payment_ref', '=', paymentRef)
      .where('order_id', 'is', null)
      .execute();
  }
}

/** The order of the payment with the event's reference, or the one the event names, if it exists. */
async function matchOrder(db: Kysely<Database>, event: LedgerEvent): Promise<number | null> {
  const paid = await orderOfPayment(db, event.paymentRef);
  if (paid !== undefined) return paid;
  if (event.orderId === undefined) return null;
  const order = await db
    .selectFrom('orders')
    .select('id')
    .where('id', '=', event.orderId)
    .executeTakeFirst();
  return order?.id ?? null;
}
