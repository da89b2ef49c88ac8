import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import { createTransport, type NodemailerError } from 'nodemailer';
import type { OrdersRepository } from '../db';
import { buildOrderConfirmation, senderDomain } from '../mail/order-confirmation';
import { FailureType } from '../shared/errors';
import { atCrashPoint } from './crash-points';

export interface MailActivityDeps {
  orders: OrdersRepository;
  /** `smtp://host:port` (STARTTLS when offered), `smtps://…`, with `user:pass@` when needed. */
  smtpUrl: string;
  /** Sender: `shop@example.com` or `Shop <shop@example.com>`; its domain names the Message-IDs. */
  from: string;
  timeouts?: MailTimeouts;
  /**
   * Connections kept open between mails (createMailPool), owned and closed by the caller, as
   * createPaymentWorker does; unset: a new connection per mail, nothing left open.
   */
  pool?: MailPool;
}

export interface MailTimeouts {
  /** Longest wait for each step: connecting, the greeting, each reply. Default 3000. */
  stepMs?: number;
  /** Longest a whole send may take. Default 8000. */
  sendMs?: number;
}

/** Outcome of one call; `messageId` is the confirmation's (deterministic) Message-ID either way. */
export interface SendOrderConfirmationResult {
  /** True when this call handed the mail to the server. */
  sent: boolean;
  messageId: string;
  /** Set when nothing was sent because `confirmation_sent_at` was already stamped. */
  skipped?: 'already-sent';
}

// Every wait is bounded well below the 10 s start-to-close timeout this activity should get, so
// an attempt gives up (and is retried) before the server could start a second attempt beside
// it: two live attempts are two mails.
const DEFAULT_STEP_TIMEOUT_MS = 3_000;
const DEFAULT_SEND_TIMEOUT_MS = 8_000;
const DEFAULT_MAX_CONNECTIONS = 5;

// Errors without an SMTP reply that no retry can fix: the message or the configuration is wrong.
const UNSENDABLE_CODES = new Set(['ECONFIG', 'EENVELOPE']);

/** Activities that send customer mail (the seed's SendOrderConfirmation listener). */
export function createMailActivities(deps: MailActivityDeps) {
  // Fails at start-up, not on every attempt, when the sender has no usable domain.
  senderDomain(deps.from);
  const stepMs = deps.timeouts?.stepMs ?? DEFAULT_STEP_TIMEOUT_MS;
  const sendMs = deps.timeouts?.sendMs ?? DEFAULT_SEND_TIMEOUT_MS;
  const transport = deps.pool ?? createTransport(transportOptions(deps.smtpUrl, stepMs));

  return {
    /**
     * Sends the order's confirmation once, guarded by `orders.confirmation_sent_at`: skipped when
     * it is already stamped, else sent and then stamped. Send-then-stamp, as the seed does: a
     * crash between the two sends a second copy on retry (same Message-ID), where
     * stamp-then-send would lose the mail. Callers run it one at a time per order (the order
     * workflow); concurrent calls for one order can each pass the guard and each send.
     */
    async sendOrderConfirmation(input: { orderId: number }): Promise<SendOrderConfirmationResult> {
      const ctx = Context.current();
      const order = await deps.orders.findById(input.orderId);
      if (!order) {
        throw ApplicationFailure.create({
          type: FailureType.OrderNotFound,
          message: `order ${input.orderId} does not exist`,
          details: [{ orderId: input.orderId }],
          nonRetryable: true,
        });
      }
      const mail = buildOrderConfirmation(order, deps.from);
      const logged = { orderId: order.id, messageId: mail.messageId };
      if (order.confirmationSentAt !== null) {
        ctx.log.info('order confirmation already sent', {
          ...logged,
          confirmationSentAt: order.confirmationSentAt,
        });
        return { sent: false, messageId: mail.messageId, skipped: 'already-sent' };
      }

      const deadline = AbortSignal.timeout(sendMs);
      try {
        // Stryker disable next-line StringLiteral: a crash point's name reaches only the test hook
        await atCrashPoint('sendOrderConfirmation.smtp', () =>
          transport.sendMail({
            from: mail.from,
            to: mail.to,
            subject: mail.subject,
            text: mail.text,
            messageId: mail.messageId,
            // Tells auto-responders (out-of-office) not to answer (RFC 3834).
            headers: { 'Auto-Submitted': 'auto-generated' },
            signal: AbortSignal.any([deadline, ctx.cancellationSignal]),
          }),
        );
      } catch (error) {
        const reason: unknown = ctx.cancellationSignal.reason;
        if (ctx.cancellationSignal.aborted && reason instanceof CancelledFailure) throw reason;
        throw toMailFailure(error, order.id, deadline.aborted ? sendMs : undefined);
      }

      // From here on the mail is out; a crash before the stamp below is the remaining gap.
      // Stryker disable next-line StringLiteral: a crash point's name reaches only the test hook
      const first = await atCrashPoint('sendOrderConfirmation.stamp', () =>
        deps.orders.markConfirmationSent(order.id),
      );
      if (first) {
        ctx.log.info('order confirmation sent', logged);
      } else {
        ctx.log.warn(
          'order confirmation sent, but another attempt had stamped it meanwhile',
          logged,
        );
      }
      return { sent: true, messageId: mail.messageId };
    },
  };
}

export type MailActivities = ReturnType<typeof createMailActivities>;

/**
 * SMTP connections kept open and reused across mails (nodemailer's pool, `maxConnections` at
 * once, 5 unless told; a mail waits for a free one within its whole-send limit):
 * a new connection costs a TCP and SMTP handshake, and many servers hold back their greeting
 * for a while to catch clients that talk too early (the dev sink 100 ms), which a pooled mail
 * pays once per connection instead of once per mail (docs/benchmarks.md). Close it when the
 * worker stops: open connections keep the process alive. An idle connection is dropped after
 * the step timeout, so none is held open between bursts of mail.
 */
export function createMailPool(
  smtpUrl: string,
  options: MailTimeouts & { maxConnections?: number } = {},
) {
  return createTransport({
    ...transportOptions(smtpUrl, options.stepMs ?? DEFAULT_STEP_TIMEOUT_MS),
    pool: true,
    maxConnections: options.maxConnections ?? DEFAULT_MAX_CONNECTIONS,
    // A connection that closes before the message went out (a server that hangs up before its
    // greeting) fails this attempt at once, for Temporal to retry by the activity's policy, in
    // the history and with its backoff. Nodemailer's default opens up to five more connections
    // within the attempt, unseen. (A connection lost during the message fails the send either way.)
    maxRequeues: 0,
  });
}

export type MailPool = ReturnType<typeof createMailPool>;

function transportOptions(smtpUrl: string, stepMs: number) {
  return {
    url: smtpUrl,
    connectionTimeout: stepMs,
    greetingTimeout: stepMs,
    socketTimeout: stepMs,
    dnsTimeout: stepMs,
    // The mail is built here from order data; it never needs to read files or fetch URLs.
    disableFileAccess: true,
    disableUrlAccess: true,
  };
}

/**
 * 4xx replies, timeouts and broken connections are worth retrying; a 5xx reply is the server
 * refusing this message for good (RFC 5321 4.2.1), except 503 (bad command sequence). Nodemailer
 * classifies every reply so (`permanent`); its rule is the one we want.
 */
function toMailFailure(error: unknown, orderId: number, deadlineMs: number | undefined) {
  const err = (typeof error === 'object' && error !== null ? error : {}) as NodemailerError;
  const details = [
    {
      orderId,
      code: err.code ?? null,
      responseCode: err.responseCode ?? null,
      command: err.command ?? null,
      response: err.response ?? null,
    },
  ];
  // Failure messages and stack traces are stored in Temporal in clear, even with payload
  // encryption on (only `details` are payloads), and SMTP replies often quote the recipient:
  // "550 5.1.1 <buyer@example.com>: Recipient address rejected". Addresses are masked in both;
  // the unmasked reply stays in `details`.
  const cause = error instanceof Error ? withoutAddresses(error) : undefined;
  const reply = err.responseCode;
  const rejected =
    reply !== undefined
      ? err.permanent === true
      : err.code !== undefined && UNSENDABLE_CODES.has(err.code);
  if (rejected) {
    return ApplicationFailure.create({
      type: FailureType.MailRejected,
      message: `mail server refused the confirmation of order ${orderId}: ${maskAddresses(err.response ?? err.message)}`,
      details,
      cause,
      nonRetryable: true,
    });
  }
  const message =
    deadlineMs !== undefined
      ? `mail server did not take the confirmation of order ${orderId} within ${deadlineMs} ms`
      : reply !== undefined
        ? `mail server deferred the confirmation of order ${orderId}: ${maskAddresses(err.response ?? err.message)}`
        : `mail server unavailable for the confirmation of order ${orderId}: ${maskAddresses(err.message ?? String(error))}`;
  return ApplicationFailure.create({ type: FailureType.MailUnavailable, message, details, cause });
}

const EMAIL_ADDRESS = /[^\s<>()[\]"',;:@]+@[^\s<>()[\]"',;:@]+/g;

/** The text with every e-mail address replaced by `[address]`. */
export function maskAddresses(text: string | undefined): string {
  return (text ?? '').replace(EMAIL_ADDRESS, '[address]');
}

/** A copy of the error for the failure's cause chain, its message and stack masked. */
function withoutAddresses(error: Error): Error {
  const copy = new Error(maskAddresses(error.message));
  copy.name = error.name;
  copy.stack = maskAddresses(error.stack);
  return copy;
}
