/**
 * Leaves the PostgreSQL cluster of global-setup.ts running for the next mutant: its watchdog
 * (harness/postgres/test-server.ts) stops it and deletes its directory when the Stryker worker exits.
 */
export default async function strykerGlobalTeardown(): Promise<void> {}
