import { z } from 'zod';
import { doc } from './fields';

/** What every process reads: the mode (which the production rules of each slice key on) and the log level. */
export const processFields = {
  NODE_ENV: doc(
    z.enum(['development', 'test', 'production']).default('development'),
    '`production` turns on every slice’s production rules: it refuses the public dev secrets, the embedded Temporal server, the warehouse simulator and the local SMTP sink',
  ),
  LOG_LEVEL: doc(
    z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
    'pino level: `fatal` … `trace`, or `silent`',
  ),
};
