import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { bundleWorkflowCode, DefaultLogger } from '@temporalio/worker';
import { PAYMENT_WORKFLOW_MODULES, WORKFLOW_BUNDLE_FILENAME } from './payments';
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
): Promise<{ path: string; bytes: number }> {
  const { code } = await bundleWorkflowCode({
    workflowsPath: PAYMENT_WORKFLOW_MODULES.workflowsPath,
    workflowInterceptorModules: PAYMENT_WORKFLOW_MODULES.interceptorModules,
    // webpack's module-by-module report is noise in a build log; its warnings still show.
    logger: new DefaultLogger('WARN'),
  });
  await mkdir(path.dirname(outFile), { recursive: true });
  await writeFile(outFile, code);
  return { path: outFile, bytes: Buffer.byteLength(code) };
}

// `npm run build`, after tsc: node --import tsx src/workers/workflow-bundle.ts [out-file]
if (require.main === module) {
  runMain(async () => {
    const outFile = process.argv[2] ? path.resolve(process.argv[2]) : undefined;
    const { path: file, bytes } = await buildWorkflowBundle(outFile);
    process.stdout.write(
      `Workflow bundle: ${path.relative(process.cwd(), file)} (${(bytes / 1024).toFixed(0)} KiB)\n`,
    );
  });
}
