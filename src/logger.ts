import pino, { type Logger } from 'pino';
import type { Config } from './config';
import { maskEmail } from './shared/pii';

export type { Logger };

const EMAIL_FIELDS = ['customerEmail', 'customer_email', 'email'];

/** What every log line is stripped of, by path; exported so tests check the logger's own rules. */
export const LOG_REDACTION = {
  paths: [
    'req.headers["x-payment-signature"]',
    'req.headers.authorization',
    'headers["x-payment-signature"]',
    'headers.authorization',
    'secret',
    '*.secret',
    'body',
    'rawBody',
    ...EMAIL_FIELDS.flatMap((field) => [field, `*.${field}`]),
  ],
  // E-mail addresses keep a hint (j***@example.com) for the person reading; the rest goes.
  censor: (value: unknown, path: string[]) =>
    EMAIL_FIELDS.includes(path.at(-1) ?? '') ? maskEmail(value) : '[redacted]',
};

/** Secrets and raw bodies redacted by path, e-mail addresses masked (docs/security.md). */
export function createLogger(
  config: Pick<Config, 'LOG_LEVEL'> & Partial<Pick<Config, 'NODE_ENV'>>,
  name = 'order-payments',
): Logger {
  return pino({
    name,
    level: config.LOG_LEVEL,
    // A person at a terminal gets readable lines; anything else (files, log shippers) gets JSON.
    transport: wantsPrettyOutput(config.NODE_ENV)
      ? {
          target: 'pino-pretty',
          options: { ignore: 'pid,hostname', translateTime: 'SYS:HH:MM:ss.l' },
        }
      : undefined,
    redact: LOG_REDACTION,
  });
}

function wantsPrettyOutput(nodeEnv: Config['NODE_ENV'] | undefined): boolean {
  if (nodeEnv === 'production' || !process.stdout.isTTY) return false;
  try {
    // A development dependency: absent from production installs (npm ci --omit=dev).
    require.resolve('pino-pretty');
    return true;
  } catch {
    return false;
  }
}
