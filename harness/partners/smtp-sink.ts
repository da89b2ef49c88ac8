import type { AddressInfo } from 'node:net';
import { simpleParser } from 'mailparser';
import { SMTPServer, type SMTPServerDataStream } from 'smtp-server';

/**
 * A local SMTP peer for development and tests: it speaks real SMTP on loopback, keeps every
 * message it accepts in memory, and can be told to refuse or to answer slowly, so retries and
 * timeouts can be exercised against a real protocol exchange. Not a mail server: nothing is
 * relayed, nothing is written to disk.
 */

/** One message the sink accepted. */
export interface ReceivedMail {
  /** MAIL FROM of the SMTP envelope (empty string for the null sender). */
  envelopeFrom: string;
  /** RCPT TO addresses of the SMTP envelope. */
  envelopeTo: string[];
  subject: string | undefined;
  /** The Message-ID header as sent, angle brackets included. */
  messageId: string | undefined;
  /** Header values by lower-case name; a repeated header keeps its first value. */
  headers: Record<string, string>;
  /**
   * The text body (of a multipart message, its text/plain part), transfer encoding undone, line
   * ends as `\n`, without the final line break SMTP adds.
   */
  text: string;
  /** The message exactly as received (dot-stuffing undone by the server). */
  raw: string;
  receivedAt: string;
}

/** An SMTP error reply: 4xx is temporary (try again later), 5xx permanent. */
export interface SmtpReply {
  code: number;
  message?: string;
}

/** How the sink answers each message once it has received it whole. */
export type SmtpSinkMode =
  /** 250 after `delayMs` (default 0). A delayed message is kept on receipt, like a slow MTA that has already queued it. */
  | { kind: 'accept'; delayMs?: number }
  /** Refuses every message with this reply; nothing is kept. */
  | ({ kind: 'reject' } & SmtpReply);

export interface SmtpSink {
  /** `smtp://<host>:<port>`, ready for nodemailer's `createTransport`. */
  readonly url: string;
  readonly port: number;
  /** Accepted messages, oldest first. */
  readonly messages: ReceivedMail[];
  /** Called with each accepted message (the dev stack logs them). */
  onMessage: ((mail: ReceivedMail) => void) | undefined;
  /** How many messages were refused so far. */
  readonly rejectedCount: number;
  /** How many SMTP sessions clients opened so far (a pooled client reuses one for many mails). */
  readonly connectionCount: number;
  /** How many of them are still open. */
  readonly openConnections: number;
  /** Refuses the next `count` messages with `reply`, then answers by the mode again. */
  failNext(count: number, reply: SmtpReply): void;
  /** Sets how later messages are answered (after any `failNext` refusals are used up). */
  setMode(mode: SmtpSinkMode): void;
  /** Forgets received messages, pending refusals and counts, and accepts again at once. */
  reset(): void;
  /** Stops listening and ends open sessions; answers delayed replies at once. Safe to call twice. */
  close(): Promise<void>;
}

export interface SmtpSinkOptions {
  /** Default 0: any free port. */
  port?: number;
  /** Default 127.0.0.1: the sink takes mail from anyone who can reach it, so keep it on loopback. */
  host?: string;
}

const DEFAULT_HOST = '127.0.0.1';
const MAX_MESSAGE_BYTES = 10 * 1024 * 1024;
// After close(), sessions a client left open get this long before they are cut.
const CLOSE_GRACE_MS = 1_000;

/** Starts the sink and resolves once it listens. */
export async function startSmtpSink(options: SmtpSinkOptions = {}): Promise<SmtpSink> {
  const host = options.host ?? DEFAULT_HOST;
  const messages: ReceivedMail[] = [];
  const pendingReplies = new Set<{ timer: NodeJS.Timeout; reply: () => void }>();
  const failures: SmtpReply[] = [];
  let mode: SmtpSinkMode = { kind: 'accept' };
  let rejectedCount = 0;
  let connectionCount = 0;
  let openConnections = 0;

  const answer = async (raw: Buffer, envelopeFrom: string, envelopeTo: string[]) => {
    const failure = failures.shift() ?? (mode.kind === 'reject' ? mode : undefined);
    if (failure) {
      rejectedCount += 1;
      return { error: smtpError(failure), delayMs: 0 };
    }
    const mail = await parseMail(raw, envelopeFrom, envelopeTo);
    messages.push(mail);
    sink.onMessage?.(mail);
    return { error: null, delayMs: mode.kind === 'accept' ? (mode.delayMs ?? 0) : 0 };
  };

  const server = new SMTPServer({
    secure: false,
    // Plain SMTP on loopback: no certificate to provide, no TLS handshake in tests. AUTH is
    // accepted with any credentials so an SMTP_URL with user:pass still works against the sink.
    disabledCommands: ['STARTTLS'],
    authOptional: true,
    allowInsecureAuth: true,
    onAuth: (auth, _session, callback) => callback(null, { user: auth.username ?? 'anonymous' }),
    // A reverse DNS lookup per connection would only slow every test down.
    disableReverseLookup: true,
    size: MAX_MESSAGE_BYTES,
    closeTimeout: CLOSE_GRACE_MS,
    logger: false,
    banner: 'order-payments SMTP sink',
    onConnect(_session, callback) {
      connectionCount += 1;
      openConnections += 1;
      callback();
    },
    onClose() {
      openConnections -= 1;
    },
    onData(stream: SMTPServerDataStream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('error', (error) => callback(error));
      stream.on('end', () => {
        if (stream.sizeExceeded) {
          callback(smtpError({ code: 552, message: 'message too big' }));
          return;
        }
        const { mailFrom, rcptTo } = session.envelope;
        answer(
          Buffer.concat(chunks),
          mailFrom ? mailFrom.address : '',
          rcptTo.map((r) => r.address),
        ).then(({ error, delayMs }) => {
          if (delayMs <= 0) {
            callback(error);
            return;
          }
          const pending = {
            reply: () => {
              pendingReplies.delete(pending);
              callback(error);
            },
            timer: setTimeout(() => pending.reply(), delayMs),
          };
          pendingReplies.add(pending);
        }, callback);
      });
    },
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  // Errors of single sessions (a client that hung up mid-command) are theirs, not the sink's.
  server.on('error', () => undefined);
  const port = (server.server.address() as AddressInfo).port;

  let closing: Promise<void> | undefined;
  const sink: SmtpSink = {
    onMessage: undefined,
    url: `smtp://${host.includes(':') ? `[${host}]` : host}:${port}`,
    port,
    messages,
    get rejectedCount() {
      return rejectedCount;
    },
    get connectionCount() {
      return connectionCount;
    },
    get openConnections() {
      return openConnections;
    },
    failNext(count, reply) {
      checkReply(reply);
      if (!Number.isInteger(count) || count < 0) {
        throw new Error(`failNext count must be a non-negative integer (got ${count})`);
      }
      for (let i = 0; i < count; i += 1) failures.push({ ...reply });
    },
    setMode(next) {
      if (next.kind === 'reject') checkReply(next);
      mode = { ...next };
    },
    reset() {
      messages.length = 0;
      failures.length = 0;
      rejectedCount = 0;
      connectionCount = 0;
      mode = { kind: 'accept' };
    },
    close() {
      return (closing ??= new Promise<void>((resolve) => {
        for (const pending of pendingReplies) {
          clearTimeout(pending.timer);
          pending.reply();
        }
        server.close(() => resolve());
      }));
    },
  };
  return sink;
}

function checkReply(reply: SmtpReply): void {
  if (!Number.isInteger(reply.code) || reply.code < 400 || reply.code > 599) {
    throw new Error(`an SMTP error reply is 4xx or 5xx (got ${reply.code})`);
  }
}

function smtpError(reply: SmtpReply): Error {
  const fallback = reply.code < 500 ? 'try again later' : 'message refused';
  return Object.assign(new Error(reply.message ?? fallback), { responseCode: reply.code });
}

/** Reads a message with mailparser: headers, encoded words, transfer encodings, MIME parts. */
async function parseMail(
  raw: Buffer,
  envelopeFrom: string,
  envelopeTo: string[],
): Promise<ReceivedMail> {
  const parsed = await simpleParser(raw, {
    skipHtmlToText: true,
    skipTextToHtml: true,
    skipTextLinks: true,
    skipImageLinks: true,
  });
  const headers: Record<string, string> = {};
  for (const { key, line } of parsed.headerLines) {
    // The value as sent, unfolded (RFC 5322 2.2.3), rather than mailparser's structured form.
    headers[key] ??= line
      .slice(line.indexOf(':') + 1)
      .replace(/\r?\n(?=[ \t])/g, '')
      .trim();
  }
  return {
    envelopeFrom,
    envelopeTo,
    subject: parsed.subject,
    messageId: parsed.messageId,
    headers,
    // SMTP ends the data with a line break whether or not the text had one; drop it.
    text: (parsed.text ?? '').replace(/\r\n/g, '\n').replace(/\n$/, ''),
    raw: raw.toString('utf8'),
    receivedAt: new Date().toISOString(),
  };
}
