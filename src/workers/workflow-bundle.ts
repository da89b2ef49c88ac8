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
import { createTool, parseTool } from '../cli/command-line';

/**
 * Built once (`npm run build`) so production workers skip webpack at start; the interceptors are
 * packed in, since a worker ignores `interceptors.workflowModules` with a bundle. It must match
 * the loading @temporalio/worker version: the SDK is pinned, so `npm ci && npm run build` does.
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

async function bundleFromSource(): Promise<string> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: PAYMENT_WORKFLOW_MODULES.workflowsPath,
    workflowInterceptorModules: PAYMENT_WORKFLOW_MODULES.interceptorModules,
    // webpack's module-by-module report is noise in a build log; its warnings still show.
    logger: new DefaultLogger('WARN'),
  });
  return code;
}

export interface VersionedWorkflowCode {
  code: string;
  deployment: WorkerDeployment;
  origin: string;
}

/** One load per process for all its workers: the same code, the same build. */
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

// `npm run build`, after tsc (the crash and chaos stacks name a file of their own).
const commandLine = () =>
  createTool(
    'node --import tsx src/workers/workflow-bundle.ts',
    'Bundles the workflow code for production workers (npm run build runs it after tsc).',
  )
    .usage('[out-file]')
    .argument(
      '[out-file]',
      `where to write it (default: ${path.relative(process.cwd(), DEFAULT_BUNDLE_PATH)})`,
    );

if (require.main === module) {
  runMain(async () => {
    const line = await parseTool(commandLine(), ([file]) => file && path.resolve(file));
    if (line.kind === 'exit') return line.code;
    const { path: file, bytes, buildId } = await buildWorkflowBundle(line.work);
    process.stdout.write(
      `Workflow bundle: ${path.relative(process.cwd(), file)} (${(bytes / 1024).toFixed(0)} KiB), build ID ${buildId}\n`,
    );
  });
}
