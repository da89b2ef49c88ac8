import os from 'node:os';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import * as bundler from '@temporalio/worker/lib/workflow/bundler';
import { ReusableVMWorkflowCreator } from '@temporalio/worker/lib/workflow/reusable-vm';

const cacheKey = Symbol.for('order-payments.stryker.workflow-bundles');

// Mutants in workflow code (src/workflows) run inside the Temporal worker's V8 sandbox, where
// the instrumented code looks for Stryker's context on the sandbox's own `globalThis`: without
// help it finds none, so no mutant is ever active there and no coverage leaves the sandbox.
// This setup file (used only by npm run mutate) bridges the two:
// - TEMPORAL_DEBUG runs workflows in this thread (a worker thread is another isolate, which no
//   object can cross);
// - each sandbox gets a `__stryker__` getter that returns this test file's context: the active
//   mutant, the hit counter and the per-test coverage, shared with the jest runner. It is an
//   accessor, not a value, because the worker deep-freezes the sandbox's initial global values.
// The mutated workflow source itself reaches the sandbox the ordinary way: the tests bundle
// src/workflows from Stryker's sandbox directory, where the files are instrumented.
process.env.TEMPORAL_DEBUG ??= '1';

interface StrykerContext {
  activeMutant?: string;
}
const host = globalThis as { __stryker__?: StrykerContext };
host.__stryker__ ??= {};
const activeMutant = process.env.__STRYKER_ACTIVE_MUTANT__;
if (host.__stryker__.activeMutant === undefined && activeMutant) {
  host.__stryker__.activeMutant = activeMutant;
}

type InjectGlobals = (context: object) => void;
const proto = ReusableVMWorkflowCreator.prototype as unknown as { injectGlobals: InjectGlobals };
const inject = proto.injectGlobals;
proto.injectGlobals = function injectGlobals(this: unknown, context: object) {
  inject.call(this, context);
  Object.defineProperty(context, '__stryker__', {
    get: () => host.__stryker__,
    configurable: true,
    enumerable: false,
  });
};

// One webpack bundle per set of bundle options for the whole Stryker worker, instead of one per
// test file per mutant (seconds each): every mutant is in the instrumented code, switched on at
// run time, so the bundle of the sandbox's files is the same for all of them. The cache lives
// on a Node core module, the one object jest's per-file module registries share.
type BundleOptions = Parameters<typeof bundler.bundleWorkflowCode>[0];
type Bundle = Awaited<ReturnType<typeof bundler.bundleWorkflowCode>>;
const shared = os as unknown as { [cacheKey]?: Map<string, Promise<Bundle>> };
const bundles = (shared[cacheKey] ??= new Map<string, Promise<Bundle>>());
const bundle = bundler.bundleWorkflowCode;
(bundler as { bundleWorkflowCode: typeof bundle }).bundleWorkflowCode = (
  options: BundleOptions,
) => {
  if (options.webpackConfigHook) return bundle(options);
  const { logger: _logger, ...rest } = options;
  const key = JSON.stringify(rest);
  let cached = bundles.get(key);
  if (!cached) {
    cached = bundle(options);
    cached.catch(() => bundles.delete(key));
    bundles.set(key, cached);
  }
  return cached;
};

// On a loaded machine the Java test server sometimes misses the SDK's 5-second start-up window.
// In a mutant run that failure would count as a kill the mutant did not earn: try again.
const createTimeSkipping = TestWorkflowEnvironment.createTimeSkipping.bind(TestWorkflowEnvironment);
TestWorkflowEnvironment.createTimeSkipping = async (...args) => {
  for (let attempt = 1; ; attempt++) {
    try {
      return await createTimeSkipping(...args);
    } catch (error) {
      const slowStart = error instanceof Error && error.message.includes('did not start within');
      if (!slowStart || attempt === 3) throw error;
    }
  }
};
