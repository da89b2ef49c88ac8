import { createPaymentStarter } from '../temporal/payment-starter';
import type { LoyaltyRepository, RefundsRepository } from '../db';
import { createAlertActivities, type AlertActivityDeps } from './alert-activities';
import { createAlertDigestActivities } from './alert-digest-activities';
import { createLoyaltyActivities } from './loyalty-activities';
import { createMailActivities, type MailPool } from './mail-activities';
import { createOrderActivities, type OrderActivityDeps } from './order-activities';
import { createPartnerActivities } from './partner-activities';
import { createPaymentActivities, type PaymentActivityDeps } from './payment-activities';
import {
  createStripeApiActivities,
  type StripeApiActivities,
  type StripeApiActivityDeps,
} from './stripe-api-activities';
import { createRefundActivities } from './refund-activities';
import { createDisputeActivities } from './dispute-activities';
import { createSlaActivities, type SlaActivities } from './sla-activities';

export interface ActivityDeps extends PaymentActivityDeps, OrderActivityDeps {
  alerts: AlertActivityDeps;
  /** `pool`: SMTP connections reused across mails (SMTP_MAX_CONNECTIONS); unset, one per mail. */
  mail: { smtpUrl: string; from: string; maxConnections?: number; pool?: MailPool };
  loyalty: LoyaltyRepository;
  /** For Stripe thin events; their starts go through the worker's own Temporal client. */
  stripeApi: Omit<StripeApiActivityDeps, 'starter'>;
  refunds: RefundsRepository;
}

/** As long as a webhook waits for a start (TEMPORAL_START_TIMEOUT_MS's default). */
const THIN_EVENT_START_TIMEOUT_MS = 5_000;

/** The stock aggregation is not among them: it runs on the heavy worker (./heavy.ts). */
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
    ...createAlertDigestActivities({ client: deps.client, timing: deps.alerts.digestTiming }),
    ...createStripeApiActivities({
      ...deps.stripeApi,
      starter: createPaymentStarter(deps.client, {
        startTimeoutMs: THIN_EVENT_START_TIMEOUT_MS,
      }),
    }),
    ...createRefundActivities(deps),
    ...createPartnerActivities(deps),
    ...createDisputeActivities(deps),
    ...createSlaActivities({
      client: deps.client,
      orders: deps.orders,
      partnerPauses: deps.partnerPauses,
      sla: deps.alerts.sla,
    }),
  };
}

/** The thin event workflow and SLA check proxy their own types, so mocks need not list them. */
export type Activities = Omit<
  ReturnType<typeof createActivities>,
  keyof StripeApiActivities | keyof SlaActivities
>;
