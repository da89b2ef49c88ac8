import pino, { type Logger } from 'pino';
import type { Config } from './config';

export type { Logger };

/**
 * One structured logger for the whole process (HTTP, worker, SDK). Secrets and raw bodies are
 * redacted by path so a careless log call cannot leak them.
 */
export function createLogger(config: Pick<Config, 'LOG_LEVEL'>, name = 'order-payments'): Logger {
  return pino({
    name,
    level: config.LOG_LEVEL,
    redact: {
      paths: [
        'req.headers["x-payment-signature"]',
        'req.headers.authorization',
        'headers["x-payment-signature"]',
        'secret',
        '*.secret',
        'body',
        'rawBody',
      ],
      censor: '[redacted]',
    },
  });
}
