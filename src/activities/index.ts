import type { LoyaltyRepository, StockRepository } from '../db';
import { createAlertActivities, type AlertActivityDeps } from './alert-activities';
import { createLoyaltyActivities } from './loyalty-activities';
import { createMailActivities } from './mail-activities';
import { createOrderActivities, type OrderActivityDeps } from './order-activities';
import { createPaymentActivities, type PaymentActivityDeps } from './payment-activities';
import { createStockActivities } from './stock-activities';

export interface ActivityDeps extends PaymentActivityDeps, OrderActivityDeps {
  alerts: AlertActivityDeps;
  mail: { smtpUrl: string; from: string };
  loyalty: LoyaltyRepository;
  stock: StockRepository;
  /** Makes each stock aggregation take at least this long (demo of a long scheduled job). */
  stockAggregationDelayMs?: number;
}

/** Every activity the workers register, built from their dependencies. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createPaymentActivities(deps),
    ...createOrderActivities(deps),
    ...createMailActivities({
      orders: deps.orders,
      smtpUrl: deps.mail.smtpUrl,
      from: deps.mail.from,
    }),
    ...createLoyaltyActivities({ loyalty: deps.loyalty, orders: deps.orders }),
    ...createStockActivities({
      stock: deps.stock,
      aggregationDelayMs: deps.stockAggregationDelayMs,
    }),
    ...createAlertActivities(deps.alerts),
  };
}

/** The type workflows proxy against (`import type` only). */
export type Activities = ReturnType<typeof createActivities>;
