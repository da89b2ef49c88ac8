/** @type {import('jest').Config} */
module.exports = {
  // Node's, plus the SDK warnings and errors of a failing test in its failure message.
  testEnvironment: '<rootDir>/test/support/sdk-log-environment.ts',
  // test/ tests src/ and harness/; the development tools' tests sit beside them in dev/.
  roots: ['<rootDir>/test', '<rootDir>/dev'],
  testMatch: ['**/*.test.ts'],
  // The multi-service cluster's conformance tests run on their own: npm run test:cluster.
  testPathIgnorePatterns: ['/node_modules/', '<rootDir>/dev/cluster/'],
  transform: { '^.+\\.(ts|js|mjs)$': ['@swc/jest', { jsc: { target: 'es2022' } }] },
  // A few of Fastify's dependencies ship only ES modules (cookie 2); compile those to CommonJS
  // like our own code. Everything else in node_modules loads untouched.
  transformIgnorePatterns: ['/node_modules/(?!(cookie)/)'],
  // sqlite-errors-setup.ts: a failed SQLite statement throws an Error of the test file running it.
  setupFiles: [
    '<rootDir>/test/support/quiet-sdk-logs.ts',
    '<rootDir>/test/support/sqlite-errors-setup.ts',
  ],
  globalSetup: '<rootDir>/test/support/global-setup.ts',
  globalTeardown: '<rootDir>/test/support/global-teardown.ts',
  // Workflow bundling and server start-up take seconds, not milliseconds.
  testTimeout: 60_000,
  // Two cores: one Temporal server per test file is enough load per core.
  maxWorkers: 2,
  reporters: ['default', '<rootDir>/test/support/summary-reporter.js'],
};
