import { createAlertDeliveriesRepository } from '../../src/db';
import { testDatabases } from '../../harness/databases';
import { useTestDatabase } from '../support/database-fixture';

// The stamp that keeps a retried alert delivery from posting again (docs/exactly-once.md, Alerts).
describe.each(testDatabases)('alert deliveries ($name)', ({ create }) => {
  const database = useTestDatabase(create);
  const deliveries = database.repository(createAlertDeliveriesRepository);

  it('stamps a key once: the first call wins, later ones find it', async () => {
    expect(await deliveries.wasDelivered('alert-order-7-run-1')).toBe(false);
    expect(await deliveries.markDelivered('alert-order-7-run-1')).toBe(true);
    expect(await deliveries.markDelivered('alert-order-7-run-1')).toBe(false);
    expect(await deliveries.wasDelivered('alert-order-7-run-1')).toBe(true);
    expect(await deliveries.wasDelivered('alert-order-7-run-2')).toBe(false);
  });

  it('lets concurrent stamps of one key agree on a single winner', async () => {
    const results = await Promise.all(
      Array.from({ length: 8 }, () => deliveries.markDelivered('refund-review-9-evt_1')),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
  });
});
