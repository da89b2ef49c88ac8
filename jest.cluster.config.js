/**
 * `npm run test:cluster`: the conformance tests on a multi-service Temporal cluster
 * (dev/cluster). Kept out of `npm test`: the cluster alone is five server processes, and the
 * retry and fault scenarios wait in real time (about 2 minutes on two cores); CI runs it after
 * `npm test`.
 * @type {import('jest').Config}
 */
const base = require('./jest.config.js');

module.exports = {
  ...base,
  roots: ['<rootDir>/dev/cluster'],
  // The cluster brings its own servers: none of npm test's provisioning or PostgreSQL.
  globalSetup: undefined,
  globalTeardown: undefined,
  testPathIgnorePatterns: ['/node_modules/'],
  maxWorkers: 1,
  testTimeout: 300_000,
};
