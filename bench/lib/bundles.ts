import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { bundleWorkflowCode } from '@temporalio/worker';
import sdkPackage from '@temporalio/worker/package.json';

/**
 * Workflow bundles, built once and cached by content: every benchmark process and every worker
 * host of a run loads the same file instead of spending seconds of a 2-core machine in webpack.
 * The payments bundle is what `createPaymentWorker` would build from its `workflowsPath` and
 * interceptor module; the bench bundle holds only the bench's own workflows.
 */

const ROOT = path.resolve(__dirname, '..', '..');
const CACHE_DIR = path.join(ROOT, 'node_modules', '.cache', 'order-payments-bench');

export type BundleName = 'payments' | 'bench';

const SOURCES: Record<
  BundleName,
  { workflowsPath: string; interceptors: string[]; dirs: string[] }
> = {
  payments: {
    workflowsPath: path.join(ROOT, 'src', 'workflows', 'index.ts'),
    interceptors: [path.join(ROOT, 'src', 'workflows', 'interceptors.ts')],
    dirs: [path.join(ROOT, 'src', 'workflows'), path.join(ROOT, 'src', 'shared')],
  },
  bench: {
    workflowsPath: path.join(ROOT, 'bench', 'workflows', 'index.ts'),
    interceptors: [],
    dirs: [path.join(ROOT, 'bench', 'workflows')],
  },
};

/** Path of the bundle's code, building it when its sources changed since the last build. */
export async function workflowBundlePath(name: BundleName): Promise<string> {
  const source = SOURCES[name];
  const hash = createHash('sha256').update(sdkPackage.version);
  for (const dir of source.dirs)
    for (const file of filesUnder(dir)) hash.update(file).update(readFileSync(file));
  const file = path.join(CACHE_DIR, `${name}-${hash.digest('hex').slice(0, 16)}.js`);
  if (existsSync(file)) return file;

  const { code } = await bundleWorkflowCode({
    workflowsPath: source.workflowsPath,
    workflowInterceptorModules: source.interceptors,
    logger: quietLogger,
  });
  mkdirSync(CACHE_DIR, { recursive: true });
  // Written under a temporary name and renamed, so a reader never sees half a bundle.
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, code);
  renameSync(temp, file);
  return file;
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts'))
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
}

const quietLogger = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: (message: string) => process.stderr.write(`[bundle] ${message}\n`),
  error: (message: string) => process.stderr.write(`[bundle] ${message}\n`),
};
