import type { TestPostgres } from '../../harness/postgres/test-server';

/** Stops what global-setup started; runs even when tests fail. */
export default async function globalTeardown(): Promise<void> {
  const postgres = (globalThis as { __testPostgres?: TestPostgres }).__testPostgres;
  await postgres?.stop();
}
