// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { builtinModules } from 'node:module';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';

// Workflow code is replayed and must be deterministic: it may not touch Node built-ins, the
// process, the clock or randomness outside the SDK, nor modules with side effects (DB, HTTP,
// config, logger). Only the workflow SDK, src/shared and activity *types* are allowed.
const nodeBuiltins = builtinModules.flatMap((m) => [m, `node:${m}`]);

// src/ is what ships; dev/ (the dev stack, chaos and cluster tools), harness/ (servers, partner
// doubles and processes for dev and tests) and the dev-only test server package only help
// develop it, and never ship with it.
const devMachinery = {
  group: ['**/dev', '**/dev/**', '**/harness', '**/harness/**'],
  message: 'src/ ships without dev/ and harness/: move what production needs into src/.',
};

// What crosses a process boundary (IDs, signals, queries, failure types, export formats) lives in
// src/shared. Activities, CLIs, HTTP and Temporal set-up may import a workflow's *type* (for a
// typed start) but no value: a value they need is a definition that belongs in src/shared.
const workflowValues = {
  group: ['**/workflows', '**/workflows/**'],
  allowTypeImports: true,
  message:
    'Import only the workflow type (import type); IDs, signals, queries and failure types live in src/shared.',
};
const noDevImports = {
  group: ['**/dev', '**/dev/**'],
  message: 'Move what tests need from dev/ into harness/, or the test beside its tool in dev/.',
};
const noTestImports = {
  group: ['**/test/**'],
  message: 'test/ holds jest glue only: what dev/ shares with the tests lives in harness/.',
};
const devOnlyPackages = [
  {
    name: '@temporalio/testing',
    message: 'A devDependency: production code does not run test or dev servers.',
  },
];
const forbiddenInDeterministicCode = {
  'no-restricted-imports': [
    'error',
    {
      paths: nodeBuiltins.map((name) => ({
        name,
        message: 'Workflow code must not import Node built-ins; do I/O in an activity.',
      })),
      patterns: [
        devMachinery,
        {
          group: ['**/activities', '**/activities/**'],
          allowTypeImports: true,
          message:
            'Import activity *types* only (import type), and call them through proxyActivities.',
        },
        {
          group: [
            '**/db',
            '**/db/**',
            '**/http/**',
            '**/config',
            '**/config/**',
            '**/logger',
            '**/temporal/**',
            '**/warehouse/**',
          ],
          message: 'Workflow code must not import modules with side effects.',
        },
        {
          group: [
            '@temporalio/activity',
            '@temporalio/client',
            '@temporalio/worker',
            '@temporalio/testing',
          ],
          message:
            'Workflow code may only use @temporalio/workflow (and @temporalio/common types).',
        },
        {
          group: [
            'fastify',
            'kysely',
            'pg',
            'better-sqlite3',
            'pino',
            'undici',
            'zod',
            'nodemailer',
          ],
          message: 'Workflow code must not import I/O libraries.',
        },
      ],
    },
  ],
  'no-restricted-globals': [
    'error',
    { name: 'process', message: 'No process in workflow code: pass values in the workflow input.' },
    { name: 'console', message: 'Use log from @temporalio/workflow.' },
    { name: 'setTimeout', message: 'Use sleep() from @temporalio/workflow.' },
    { name: 'setInterval', message: 'Use sleep() in a loop from @temporalio/workflow.' },
    { name: 'fetch', message: 'HTTP belongs in an activity.' },
    { name: 'require', message: 'Use static imports in workflow code.' },
  ],
};

export default tseslint.config(
  {
    ignores: [
      'node_modules',
      'dist',
      'data',
      'coverage',
      'eslint.config.mjs',
      'jest.config.js',
      'jest.cluster.config.js',
      'test/support/summary-reporter.js',
      // StrykerJS (npm run mutate): its config files, its sandbox and its reports.
      'stryker.config.mjs',
      'test/support/stryker/*.{js,mjs,cjs}',
      '.stryker-tmp',
      'reports',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_' },
      ],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-floating-promises': 'error',
      // Fastify plugins and activity mocks are async by contract, with or without an await.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    files: ['src/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { paths: devOnlyPackages, patterns: [devMachinery, workflowValues] },
      ],
    },
  },
  {
    // Configuration sits below the processes that read it: http/ may import config/, never the
    // reverse. providers.ts is the one exception, for the Standard Webhooks key parsers and the
    // tolerance defaults that still live in src/http/providers (to move there: issue 28).
    files: ['src/config/**/*.ts'],
    ignores: ['src/config/providers.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          paths: devOnlyPackages,
          patterns: [
            devMachinery,
            workflowValues,
            {
              group: ['../http', '../http/**'],
              message: 'Configuration must not import src/http: http/ imports config/.',
            },
          ],
        },
      ],
    },
  },
  {
    // No import cycles among src/ files: the layers (entries, temporal, workflows over
    // activities, db and shared) only point down. Type-only imports are erased at build time and
    // are not counted.
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js', '.json'] })],
    },
    rules: { 'import-x/no-cycle': ['error', { ignoreExternal: true }] },
  },
  {
    files: ['src/workflows/**/*.ts', 'src/shared/**/*.ts'],
    rules: forbiddenInDeterministicCode,
  },
  // One harness (servers, doubles, processes, databases) under development and tests alike:
  // test/ and dev/ both import harness/, never each other, and harness/ imports neither.
  ...[
    { files: ['test/**/*.ts'], patterns: [noDevImports] },
    { files: ['dev/**/*.ts'], patterns: [noTestImports] },
    { files: ['harness/**/*.ts'], patterns: [noDevImports, noTestImports] },
  ].map(({ files, patterns }) => ({
    files,
    rules: { 'no-restricted-imports': ['error', { patterns }] },
  })),
  {
    files: ['test/**/*.ts', 'dev/**/*.ts', 'harness/**/*.ts'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
);
