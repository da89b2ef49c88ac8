import pino, { type Logger } from 'pino';
import type { Config } from './config';

export type { Logger };

/**
 * One structured logger for the whole process (HTTP, worker, SDK). Secrets and raw bodies are
 * redacted by path so a careless log call cannot leak them.
 */
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
