import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import type { Config } from '../config';
import { buildIdOf, deploymentFromConfig, type WorkerDeployment } from './deployment';
import {
  PAYMENT_WORKFLOW_MODULES,
  resolveWorkflowBundlePath,
  WORKFLOW_BUNDLE_FILENAME,
} from './payments';
import { runMain } from '../process/run-main';

/**
 * Writes the workflow bundle that production workers load instead of running webpack at every
 * start: `npm run build` puts it at dist/workflow-bundle.js, beside the compiled worker, which
 * picks it up by itself (see resolveWorkflowBundlePath in ./payments.ts). The interceptors are
 * packed in: a worker ignores its `interceptors.workflowModules` when it loads a bundle.
 *
 * The bundle must be built with the same @temporalio/worker version that loads it; the project
 * pins the SDK, so one `npm ci && npm run build` in the image gives a matching pair.
 */
export const DEFAULT_BUNDLE_PATH = path.resolve(
  __dirname,
  '..',
  '..',
  'dist',
  WORKFLOW_BUNDLE_FILENAME,
);

export async function buildWorkflowBundle(
  outFile: string = DEFAULT_BUNDLE_PATH,
): Promise<{ path: string; bytes: number; buildId: string }> {
  const code = await bundleFromSource();
  await mkdir(path.dirname(outFile), { recursive: true });
  await writeFile(outFile, code);
  return { path: outFile, bytes: Buffer.byteLength(code), buildId: buildIdOf(code) };
}

/** The workflows and the failure-alert interceptor, bundled now from src/. */
async function bundleFromSource(): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: PAYMENT_WORKFLOW_MODULES.workflowsPath,
    workflowInterceptorModules: PAYMENT_WORKFLOW_MODULES.interceptorModules,
    // webpack's module-by-module report is noise in a build log; its warnings still show.
    logger: new DefaultLogger('WARN'),
  });
  return code;
}

/** The workflow code a process's workers run, and the build they declare for it. */
export interface VersionedWorkflowCode {
  code: string;
  deployment: WorkerDeployment;
  /** The bundle file, or "(bundled from source)". */
  origin: string;
}

/**
 * Loads the bundle a worker runs (WORKFLOW_BUNDLE_PATH, else dist/workflow-bundle.js beside a
 * compiled worker, else bundled from src/ now) and names its build (./deployment.ts). A process
 * loads it once for all its workers: the same code, the same build.
 */
export async function loadVersionedWorkflowCode(
  config: Pick<
    Config,
    'WORKFLOW_BUNDLE_PATH' | 'WORKER_DEPLOYMENT_NAME' | 'WORKER_BUILD_ID' | 'WORKER_VERSIONING'
  >,
): Promise<VersionedWorkflowCode> {
  const bundlePath = resolveWorkflowBundlePath(config.WORKFLOW_BUNDLE_PATH);
  const code = bundlePath ? await readFile(bundlePath, 'utf8') : await bundleFromSource();
  return {
    code,
    deployment: deploymentFromConfig(config, code),
    origin: bundlePath ?? '(bundled from source)',
  };
}

// `npm run build`, after tsc: node --import tsx src/workers/workflow-bundle.ts [out-file]
if (require.main === module) {
  runMain(async () => {
    const outFile = process.argv[2] ? path.resolve(process.argv[2]) : undefined;
    const { path: file, bytes, buildId } = await buildWorkflowBundle(outFile);
    process.stdout.write(
      `Workflow bundle: ${path.relative(process.cwd(), file)} (${(bytes / 1024).toFixed(0)} KiB), build ID ${buildId}\n`,
    );
  });
}
