import globalSetup from '../global-setup';

/**
 * The project's global setup, once per Stryker worker process: every mutant is a jest run in
 * the same process, and the servers and the PostgreSQL cluster it found or started (handed on
 * through process.env) serve them all.
 */
export default async function strykerGlobalSetup(): Promise<void> {
  if (process.env.STRYKER_GLOBAL_SETUP_DONE) return;
  await globalSetup();
  process.env.STRYKER_GLOBAL_SETUP_DONE = '1';
}
