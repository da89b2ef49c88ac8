import type {
  OrderExportRepository,
  OrdersRepository,
  PaymentsRepository,
  StockRepository,
} from '../db';
import type { Client } from '@temporalio/client';
import { createAlertActivities, type AlertActivityDeps } from './alert-activities';
import { createAlertDigestActivities } from './alert-digest-activities';
import { createBatchActivities } from './batch-activities';
import { createInvoiceActivities } from './invoice-activities';
import { createStockActivities } from './stock-activities';

export interface HeavyActivityDeps {
  orders: OrdersRepository;
  payments: PaymentsRepository;
  orderExport: OrderExportRepository;
  invoiceDir: string;
  exportDir: string;
  /** Makes each invoice take at least this long (tests and demo of a saturated heavy queue). */
  invoiceDelayMs?: number;
  alerts: AlertActivityDeps;
  /** Temporal client on the worker's own connection: a failed heavy run reports to its digest. */
  client: Client;
  stock: StockRepository;
  /** Makes each stock aggregation take at least this long (demo of a long scheduled job). */
  stockAggregationDelayMs?: number;
}

/** Alert delivery is here too: a failed heavy workflow's alert child runs on its own queue. */
export function createHeavyActivities(deps: HeavyActivityDeps) {
  return {
    ...createInvoiceActivities({
      orders: deps.orders,
      payments: deps.payments,
      invoiceDir: deps.invoiceDir,
      invoiceDelayMs: deps.invoiceDelayMs,
    }),
    ...createBatchActivities({ orderExport: deps.orderExport, exportDir: deps.exportDir }),
    ...createStockActivities({
      stock: deps.stock,
      aggregationDelayMs: deps.stockAggregationDelayMs,
    }),
    ...createAlertActivities(deps.alerts),
    ...createAlertDigestActivities({ client: deps.client, timing: deps.alerts.digestTiming }),
  };
}

export type HeavyActivities = ReturnType<typeof createHeavyActivities>;
