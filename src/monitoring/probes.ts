import type { Connection } from '@temporalio/client';
import { type Kysely, sql } from 'kysely';
import type { Database } from '../db';

/** A probe that did not answer in time: a hung dependency counts as a failed one. */
export class DeadlineExceededError extends Error {
  constructor(what: string, ms: number) {
    super(`${what} did not answer within ${ms} ms`);
    this.name = 'DeadlineExceededError';
  }
}

/** The work goes on (a lazy Temporal connection retries for 20 s); its late outcome is ignored. */
export async function withDeadline<T>(
  what: string,
  ms: number,
  work: () => Promise<T>,
): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const running = work();
  running.catch(() => undefined);
  try {
    return await Promise.race([
      running,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new DeadlineExceededError(what, ms)), ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

export async function pingDatabase(db: Kysely<Database>): Promise<void> {
  await sql`select 1`.execute(db);
}

/** The cheapest authenticated call Temporal has; returns the server's version. */
export async function pingTemporal(
  connection: Pick<Connection, 'workflowService'>,
): Promise<string | undefined> {
  const info = await connection.workflowService.getSystemInfo({});
  return info.serverVersion ?? undefined;
}

export function errorMessage(error: unknown): string {
  const text = (error as { message?: unknown } | null)?.message;
  return typeof text === 'string' ? text : String(error);
}
