import type { Logger } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import {
  bundleWorkflowCode,
  Worker,
  type WorkerOptions,
  type WorkflowBundleWithSourceMap,
} from '@temporalio/worker';
import { NormalModuleReplacementPlugin } from 'webpack';
import { PAYMENT_WORKFLOW_MODULES } from '../../src/workers/payments';

/**
 * Workflow bundles for tests: webpack takes seconds, so each test file builds a bundle once and
 * every worker, replayer and environment in it shares that bundle. Called through
 * `@temporalio/worker`'s export, so npm run mutate's cache (stryker/workflow-sandbox.ts) applies.
 */
export interface BundleOptions {
  /** Default: the production workflows, src/workflows. */
  workflowsPath?: string;
  /** Default: the payment worker's (the failure-alert interceptor); `[]` bundles none. */
  interceptorModules?: string[];
  /** Changes webpack's configuration; such a bundle is built afresh, never cached. */
  webpackConfigHook?: Parameters<typeof bundleWorkflowCode>[0]['webpackConfigHook'];
}

const cache = new Map<string, Promise<WorkflowBundleWithSourceMap>>();

/** The bundle of these workflows and interceptors: built on first use, then shared. */
export function workflowBundle(options: BundleOptions = {}): Promise<WorkflowBundleWithSourceMap> {
  const workflowsPath = options.workflowsPath ?? PAYMENT_WORKFLOW_MODULES.workflowsPath;
  const interceptorModules =
    options.interceptorModules ?? PAYMENT_WORKFLOW_MODULES.interceptorModules;
  if (options.webpackConfigHook) {
    return build(workflowsPath, interceptorModules, options.webpackConfigHook);
  }
  const key = JSON.stringify([workflowsPath, interceptorModules]);
  let bundle = cache.get(key);
  if (!bundle) {
    bundle = build(workflowsPath, interceptorModules);
    bundle.catch(() => cache.delete(key));
    cache.set(key, bundle);
  }
  return bundle;
}

/** One module of the production workflows replaced by a test fixture, as webpack resolves it. */
export interface ModuleSwap {
  /** The import request to replace, e.g. `/^\.\/payment$/`. */
  request: RegExp;
  /** The fixture that stands in for it (an absolute path, from `require.resolve`). */
  fixture: string;
  /** Whether an import from this folder is swapped: the fixture may import the original. */
  importedFrom: (context: string) => boolean;
}

/**
 * The production workflows (and interceptors) with one module swapped for a fixture: another
 * build of the same code, e.g. a changed workflow for a rollout, or retuned retry numbers for
 * the replay gate. Built afresh, never cached.
 */
export function workflowBundleSwapping(swap: ModuleSwap): Promise<WorkflowBundleWithSourceMap> {
  return workflowBundle({
    webpackConfigHook: (config) => {
      config.plugins = [
        ...(config.plugins ?? []),
        new NormalModuleReplacementPlugin(
          swap.request,
          (resource: { context: string; request: string }) => {
            if (swap.importedFrom(resource.context)) resource.request = swap.fixture;
          },
        ),
      ];
      return config;
    },
  });
}

/** The options of a Worker (or replayer) that runs `bundle`, which holds its interceptors. */
export function prebuilt(bundle: WorkflowBundleWithSourceMap) {
  return { workflowBundle: bundle, workflowsPath: undefined, interceptors: undefined };
}

async function build(
  workflowsPath: string,
  workflowInterceptorModules: string[],
  webpackConfigHook?: BundleOptions['webpackConfigHook'],
): Promise<WorkflowBundleWithSourceMap> {
  const problems: string[] = [];
  try {
    return await bundleWorkflowCode({
      workflowsPath,
      workflowInterceptorModules,
      webpackConfigHook,
      logger: problemsOnly(problems),
    });
  } catch (error) {
    // The SDK's error says only "Webpack finished with errors"; webpack's own output says which.
    if (problems.length === 0) throw error;
    throw new Error(`${(error as Error).message}\n${problems.join('\n')}`, { cause: error });
  }
}

/** The bundler's stats and progress are noise in a test; its warnings and errors are kept. */
function problemsOnly(problems: string[]): Logger {
  const keep = (message: string) => void problems.push(message);
  const drop = () => {};
  return {
    log: (level, message) => (level === 'WARN' || level === 'ERROR' ? keep(message) : drop()),
    trace: drop,
    debug: drop,
    info: drop,
    warn: keep,
    error: keep,
  };
}

/** A worker on the test's server that runs `bundle` on `taskQueue`, with these activities. */
export function bundledWorker(
  env: TestWorkflowEnvironment,
  bundle: WorkflowBundleWithSourceMap,
  taskQueue: string,
  activities: WorkerOptions['activities'],
): Promise<Worker> {
  return Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    workflowBundle: bundle,
    activities,
  });
}
