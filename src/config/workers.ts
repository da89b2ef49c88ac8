import { z } from 'zod';
import { blankToUndefined, doc, integer, optionalHostPort } from './fields';

/** The payments and heavy workers: slots, the build they declare, what they expose, where files go. */
export const workerFields = {
  WORKER_MAX_CONCURRENT_ACTIVITIES: doc(
    integer(1, 10_000).default(100),
    'activity slots of the payments worker (the SDK’s default; [sizing](operations.md))',
  ),
  WORKER_MAX_CONCURRENT_WORKFLOW_TASKS: doc(
    integer(2, 10_000).default(40),
    'workflow task slots of the payments worker (the SDK’s default; at least 2: sticky and normal queue)',
  ),
  HEAVY_WORKER_MAX_CONCURRENT_ACTIVITIES: doc(
    integer(1, 100).default(2),
    'activity slots of one heavy worker (invoices, exports, the stock aggregation): low, so PDFs and exports never crowd the machine',
  ),
  WORKFLOW_BUNDLE_PATH: doc(
    blankToUndefined,
    'a prebuilt workflow bundle (`npm run build`); must exist',
    'dist/workflow-bundle.js next to a compiled worker, else bundled at start',
  ),
  WORKER_DEPLOYMENT_NAME: doc(
    z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,100}$/, {
        message: 'must be 1-100 letters, digits, - or _ (the server refuses . and :)',
      })
      .default('order-payments'),
    'the Worker Deployment every worker of this app belongs to ([docs/deploys.md](deploys.md)); no `.` or `:`',
  ),
  WORKER_BUILD_ID: doc(
    blankToUndefined.pipe(
      z
        .string()
        .regex(/^[A-Za-z0-9_-]{1,64}$/, {
          message: 'must be 1-64 letters, digits, - or _ (e.g. a commit hash or image tag)',
        })
        .optional(),
    ),
    'the build a worker declares (a commit hash, an image tag); every run is pinned to the build that started it, and the payments and heavy workers of one image must agree',
    'the first 12 hex digits of the workflow bundle’s SHA-256',
  ),
  WORKER_VERSIONING: doc(
    z.enum(['on', 'off'], { message: 'must be on or off' }).default('on'),
    '`off`: workers poll unversioned, for a server without Worker Deployments (before 1.28); workflow changes then need `patched()`',
  ),
  WORKER_SET_CURRENT: doc(
    z.enum(['if-none', 'never'], { message: 'must be if-none or never' }).default('if-none'),
    'what a standalone worker does with its build: `if-none` makes it current when the deployment has none yet (the first start), `never` leaves that to `npm run ops -- deployment current`; `npm start` always makes its build current',
  ),
  WORKER_METRICS_ADDRESS: doc(
    optionalHostPort('0.0.0.0:9464', { orOff: true }),
    'host:port of the worker’s Prometheus endpoint (`/metrics`, the SDK’s metrics), or `off`',
    'off (`npm start`: `127.0.0.1:9464`)',
  ),
  WORKER_HEALTH_ADDRESS: doc(
    optionalHostPort('0.0.0.0:8081'),
    'host:port of the standalone worker’s `/healthz` and `/readyz` (Kubernetes probes)',
    'off',
  ),
  INVOICE_DIR: doc(
    z.string().min(1).default('./data/invoices'),
    'directory of the PDF invoices (`order-<id>.pdf`), shared by every heavy worker',
  ),
  EXPORT_DIR: doc(
    z.string().min(1).default('./data/exports'),
    'directory of the order exports (`<exportId>/orders.csv`), shared by every heavy worker',
  ),
};
