import type { Worker } from '@temporalio/worker';
import {
  createOrderExportRepository,
  createOrdersRepository,
  createPaymentsRepository,
  createStockRepository,
  type DatabaseHandle,
} from '../../src/db';
import type { HeavyActivityDeps } from '../../src/activities/heavy';

/** A worker that runs until stopped. */
export interface RunningWorker {
  worker: Worker;
  /** Shuts the worker down and waits until its run has ended (in-flight tasks finished). */
  stop: () => Promise<void>;
}

export function runUntilStopped(worker: Worker): RunningWorker {
  const run = worker.run();
  return {
    worker,
    stop: async () => {
      worker.shutdown();
      await run;
    },
  };
}

/**
 * The heavy worker's activities on `db`, writing into the given folders, with no alert webhook:
 * what src/heavy-worker.ts builds from its config, without the config.
 */
export function heavyTestActivityDeps(
  db: DatabaseHandle,
  files: Pick<HeavyActivityDeps, 'invoiceDir' | 'exportDir' | 'invoiceDelayMs'>,
): Omit<HeavyActivityDeps, 'client'> {
  return {
    orders: createOrdersRepository(db.db),
    payments: createPaymentsRepository(db.db),
    orderExport: createOrderExportRepository(db.db),
    stock: createStockRepository(db.db),
    alerts: { alertWebhookUrl: undefined, temporalUiUrl: undefined },
    ...files,
  };
}
