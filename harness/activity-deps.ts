import { createWarehouseClient } from '../src/activities/warehouse-client';
import {
  createLoyaltyRepository,
  createOrdersRepository,
  createPartnerPausesRepository,
  createPaymentsRepository,
  createUnmatchedRepository,
  createRefundsRepository,
  createDisputesRepository,
  createSettlementsRepository,
  type DatabaseHandle,
} from '../src/db';
import type { WorkerActivityDeps } from '../src/workers/payments';

/** The production activities' dependencies over a test database and local peers. */
export function testActivityDeps(
  db: DatabaseHandle,
  peers: { warehouseUrl: string; smtpUrl: string; warehouseTimeoutMs?: number },
): WorkerActivityDeps {
  return {
    payments: createPaymentsRepository(db.db),
    orders: createOrdersRepository(db.db),
    loyalty: createLoyaltyRepository(db.db),
    refunds: createRefundsRepository(db.db),
    partnerPauses: createPartnerPausesRepository(db.db),
    disputes: createDisputesRepository(db.db),
    settlements: createSettlementsRepository(db.db),
    warehouse: createWarehouseClient({
      baseUrl: peers.warehouseUrl,
      timeoutMs: peers.warehouseTimeoutMs ?? 5_000,
    }),
    mail: { smtpUrl: peers.smtpUrl, from: 'Order Payments <orders@test.local>' },
    alerts: { alertWebhookUrl: undefined, temporalUiUrl: undefined },
    stripeApi: { unmatched: createUnmatchedRepository(db.db), shopCurrency: 'jpy' },
  };
}
