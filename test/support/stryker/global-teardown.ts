/**
 * Leaves the PostgreSQL cluster of global-setup.ts running for the next mutant: its watchdog
 * (test/support/postgres.ts) stops it and deletes its directory when the Stryker worker exits.
 */
export default async function strykerGlobalTeardown(): Promise<void> {}
