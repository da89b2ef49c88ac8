import { createHttpMetrics } from '../../src/http/metrics';
import type { PartnerPause } from '../../src/db';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';
import { createPartnerPausesRepository } from '../../src/db';

// order_payments_partner_paused, as the HTTP processes' /metrics serve it from the pause table.
const gaugeLines = async (metrics: ReturnType<typeof createHttpMetrics>) =>
  (await metrics.registry.metrics())
    .split('\n')
    .filter((line) => line.startsWith('order_payments_partner_paused'));

describe('the partner paused gauge', () => {
  let handle: TestDatabaseHandle;
  beforeAll(async () => {
    handle = await testDatabases[0]!.create();
  });
  afterAll(() => handle?.close());

  it('is 0 until the partner is paused, 1 while it is, 0 again once resumed', async () => {
    const pauses = createPartnerPausesRepository(handle.db);
    const metrics = createHttpMetrics({ partnerPauses: pauses });
    expect(await gaugeLines(metrics)).toEqual([
      'order_payments_partner_paused{partner="warehouse"} 0',
    ]);
    await pauses.pause('warehouse', 'alice');
    expect(await gaugeLines(metrics)).toEqual([
      'order_payments_partner_paused{partner="warehouse"} 1',
    ]);
    await pauses.resume('warehouse', 3);
    expect(await gaugeLines(metrics)).toEqual([
      'order_payments_partner_paused{partner="warehouse"} 0',
    ]);
  });

  it('reports nothing, and keeps the other metrics, while the database cannot answer', async () => {
    const failing = { list: (): Promise<PartnerPause[]> => Promise.reject(new Error('db down')) };
    const metrics = createHttpMetrics({ partnerPauses: failing });
    expect(await gaugeLines(metrics)).toEqual([]);
    expect(await metrics.registry.metrics()).toContain('order_payments_webhook_deliveries_total');
  });
});
