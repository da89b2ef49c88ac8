import { z } from 'zod';
import { doc, integer } from './fields';

export const databaseFields = {
  DATABASE_URL: doc(
    z
      .string()
      .default('sqlite:./data/app.db')
      .refine((v) => /^(sqlite:|postgres:\/\/|postgresql:\/\/)/.test(v), {
        message: 'must start with sqlite: (e.g. sqlite:./data/app.db) or postgres://',
      }),
    '`sqlite:<file>` or `postgres://user:pass@host:5432/db`',
  ),
  DATABASE_POOL_MAX: doc(
    integer(1, 1000).default(10),
    'most connections one process’s PostgreSQL pool opens: pool × processes must fit the server’s `max_connections`',
  ),
};
