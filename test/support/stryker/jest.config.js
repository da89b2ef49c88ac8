// The project's jest config for StrykerJS (npm run mutate), with three changes, each because a
// mutant run is a whole jest run inside one long-lived Stryker worker process:
// - only the test files that exercise the mutated modules (stryker.config.mjs says which);
// - the global setup runs once per Stryker worker, not once per mutant (PostgreSQL stays up;
//   its watchdog stops it when the worker exits), and the teardown leaves it running;
// - workflow code runs in the worker's own thread, where a setup file hands it Stryker's
//   context (see workflow-sandbox.ts).
const path = require('node:path');
const base = require('../../../jest.config.js');

const here = '<rootDir>/test/support/stryker';

/** The test files of each scope of stryker.config.mjs (MUTATE_SCOPE). */
// A test reaches the module it covers by a direct import: Stryker's dry run, with jest's
// related-test search on, skipped the test files that imported it through src/db/index.ts.
const testFiles = {
  repositories: [
    '<rootDir>/test/db/{payments,orders,loyalty,refunds,disputes,settlements,unmatched}.test.ts',
    '<rootDir>/test/db/{event-ledger,foreign-key}.test.ts',
    '<rootDir>/test/activities/loyalty-activities.test.ts',
    '<rootDir>/test/mail/mail-activities.test.ts',
  ],
  intake: [
    '<rootDir>/test/http/{signature,webhook-auth,payment-webhook,webhook-duplicates,webhook-security,webhook-logs,validation}.test.ts',
    '<rootDir>/test/http/{stripe-webhook,standard-webhook,provider-fuzz,provider-config,provider-logs,provider-events,provider,delivery,stripe-object,payment-fields}.test.ts',
    '<rootDir>/test/shared/payment-events.test.ts',
    '<rootDir>/test/temporal/{payment-starter,thin-event-starter}.test.ts',
  ],
  activities: [
    '<rootDir>/test/shared/retry-policies.test.ts',
    '<rootDir>/test/activities/{retry-after,retry-by-cause,warehouse-client}.test.ts',
    '<rootDir>/test/activities/{refund-activities,dispute-activities}.test.ts',
    '<rootDir>/test/mail/mail-activities.test.ts',
  ],
  workflows: [
    '<rootDir>/test/workflows/{payment,payment-idempotency,warehouse-timeouts,order-runs}.test.ts',
    '<rootDir>/test/replay/replay.test.ts',
  ],
  events: ['<rootDir>/test/workflows/{refunds,disputes,thin-event}.test.ts'],
};
const scope = process.env.MUTATE_SCOPE ?? '';
if (!testFiles[scope]) throw new Error(`MUTATE_SCOPE=${scope}: no such scope`);

/** @type {import('jest').Config} */
module.exports = {
  ...base,
  rootDir: path.resolve(__dirname, '../../..'),
  testMatch: testFiles[scope],
  // Stryker wraps the environment with plain require(), which cannot load the TypeScript one.
  testEnvironment: 'node',
  setupFiles: [...(base.setupFiles ?? []), `${here}/workflow-sandbox.ts`],
  globalSetup: `${here}/global-setup.ts`,
  globalTeardown: `${here}/global-teardown.ts`,
  reporters: ['default'],
};
