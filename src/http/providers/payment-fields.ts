import { z } from 'zod';
import { MAX_INTEGER_COLUMN, MAX_ROW_ID } from '../../db/schema';
import { EVENT_ID_PATTERN } from '../../shared/constants';
import type { ProviderNotification } from './provider';

/*
 * The fields every provider's payment maps to, checked within the database's integer columns:
 * a larger order ID names no order, and a larger amount could not be recorded on PostgreSQL (the
 * payment workflow would retry forever). The range check comes first so that its limit, not
 * the safe-integer one, is what the client is told.
 */

export const orderIdNumber = z.number().positive().max(MAX_ROW_ID).int();

/**
 * An order ID sent as text, as providers' string-only metadata carries it (Stripe's
 * `metadata.order_id`): plain decimal digits, read as the number they spell.
 */
export const orderIdText = z
  .string()
  .regex(/^[1-9][0-9]{0,9}$/, 'must be the order ID: a positive whole number, as digits')
  .transform(Number)
  .pipe(orderIdNumber);

/** In the currency's smallest unit (cents, yen), as every provider here reports amounts. */
export const amountMinorUnits = z.number().positive().max(MAX_INTEGER_COLUMN).int();

/** An ISO 4217 code in either case (Stripe sends lowercase), kept lowercase. */
export const currencyCode = z
  .string()
  .regex(/^[A-Za-z]{3}$/, 'must be a three-letter ISO 4217 currency code')
  .transform((code) => code.toLowerCase());

/** An event's ID in the body, as the contract's scheme and Stripe's send it. */
export const eventIdText = z
  .string()
  .regex(EVENT_ID_PATTERN, 'must be 1-200 characters of letters, digits and _ . : -');

/** A dispute's state as both of our schemes send it. */
export const disputeStatus = z.enum(['opened', 'won', 'lost']);

/** When the dispute's evidence is due, if the provider says: kept as an ISO instant in UTC. */
export const evidenceDueBy = z.iso
  .datetime({ offset: true })
  .transform((at) => new Date(at).toISOString())
  .optional();

/** An event type: any short text (every type is acknowledged; only some are acted on). */
export const eventType = z.string().min(1).max(100);

/**
 * The payment an event of the provider's payment type must be: `schema` reads it, `toPayment`
 * maps it. Its problems are reported as the fields that failed (a 400 naming them), where a
 * union of event shapes would only say that none matched.
 */
export function readPayment<P, N extends ProviderNotification = ProviderNotification>(
  body: unknown,
  ctx: z.RefinementCtx,
  schema: z.ZodType<P>,
  toPayment: (payment: P) => N,
): N {
  const payment = schema.safeParse(body);
  if (!payment.success) {
    for (const issue of payment.error.issues) ctx.addIssue({ ...issue });
    return z.NEVER;
  }
  return toPayment(payment.data);
}

/**
 * An order reference as a provider's metadata carries it: the order ID when it is one (digits,
 * or a whole number, within the ID column), else the reference as sent ("ORD-12", "-5",
 * "99999999999"). Such a payment is signed and well-formed, only not for an order we know: it is
 * kept for an operator, not refused (a refused delivery is retried for days).
 */
export function orderReference(value: string | number): number | string {
  const text = String(value);
  return /^[1-9][0-9]{0,9}$/.test(text) && Number(text) <= MAX_ROW_ID ? Number(text) : text;
}

/**
 * A provider's amount as it was sent: a positive whole number (anything else is no amount, a
 * 400); past the columns' range it is well-formed but can be no order's (amountInRange).
 */
export const amountAsSent = z.number().positive().int();

/** Whether an amount can be recorded (and so be an order's total, or part of one). */
export function amountInRange(amount: number): boolean {
  return amount <= MAX_INTEGER_COLUMN;
}
