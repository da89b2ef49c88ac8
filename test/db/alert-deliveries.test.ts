import { createAlertDeliveriesRepository } from '../../src/db';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';

// The stamp that keeps a retried alert delivery from posting again (docs/exactly-once.md, Alerts).
describe.each(testDatabases)('alert deliveries ($name)', ({ create }) => {
  let handle: TestDatabaseHandle;
  beforeAll(async () => {
    handle = await create();
  });
  afterAll(() => handle?.close());

  it('stamps a key once: the first call wins, later ones find it', async () => {
    const deliveries = createAlertDeliveriesRepository(handle.db);
    expect(await deliveries.wasDelivered('alert-order-7-run-1')).toBe(false);
    expect(await deliveries.markDelivered('alert-order-7-run-1')).toBe(true);
    expect(await deliveries.markDelivered('alert-order-7-run-1')).toBe(false);
    expect(await deliveries.wasDelivered('alert-order-7-run-1')).toBe(true);
    expect(await deliveries.wasDelivered('alert-order-7-run-2')).toBe(false);
  });

  it('lets concurrent stamps of one key agree on a single winner', async () => {
    const deliveries = createAlertDeliveriesRepository(handle.db);
    const results = await Promise.all(
      Array.from({ length: 8 }, () => deliveries.markDelivered('refund-review-9-evt_1')),
    );
    expect(results.filter(Boolean)).toHaveLength(1);
  });
});
