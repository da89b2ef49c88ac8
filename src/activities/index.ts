import type { LoyaltyRepository, RefundsRepository } from '../db';
import { createAlertActivities, type AlertActivityDeps } from './alert-activities';
import { createLoyaltyActivities } from './loyalty-activities';
import { createMailActivities, type MailPool } from './mail-activities';
import { createOrderActivities, type OrderActivityDeps } from './order-activities';
import { createPaymentActivities, type PaymentActivityDeps } from './payment-activities';
import { createRefundActivities } from './refund-activities';

export interface ActivityDeps extends PaymentActivityDeps, OrderActivityDeps {
  alerts: AlertActivityDeps;
  /**
   * `pool`: SMTP connections reused across mails (createMailPool), at most `maxConnections`
   * (SMTP_MAX_CONNECTIONS); unset, one per mail.
   */
  mail: { smtpUrl: string; from: string; maxConnections?: number; pool?: MailPool };
  loyalty: LoyaltyRepository;
  refunds: RefundsRepository;
}

/**
 * Every activity the payments worker registers, built from their dependencies. The stock
 * aggregation is not among them: it runs on the heavy worker (./heavy.ts).
 */
export function createActivities(deps: ActivityDeps) {
  return {
    ...createPaymentActivities(deps),
    ...createOrderActivities(deps),
    ...createMailActivities({
      orders: deps.orders,
      smtpUrl: deps.mail.smtpUrl,
      from: deps.mail.from,
      pool: deps.mail.pool,
    }),
    ...createLoyaltyActivities({ loyalty: deps.loyalty, orders: deps.orders }),
    ...createAlertActivities(deps.alerts),
    ...createRefundActivities(deps),
  };
}

/** The type workflows proxy against (`import type` only). */
export type Activities = ReturnType<typeof createActivities>;
