import { createOrdersRepository } from '../../src/db/repositories/orders';
import { createStockRepository } from '../../src/db/repositories/stock';
import { testDatabases } from '../../harness/databases';
import { useTestDatabase } from '../support/database-fixture';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describe.each(testDatabases)('stock repository ($name)', ({ create }) => {
  const database = useTestDatabase(create);
  const stock = database.repository(createStockRepository);
  const orders = database.repository(createOrdersRepository);
  // Every test takes its snapshots at times of its own: the UNIQUE taken_at is per database.
  let minute = 0;
  const nextSlot = () => new Date(Date.UTC(2025, 0, 31, 9, ++minute)).toISOString();

  async function addOrder(state: {
    paid: boolean;
    shipment: 'requested' | 'failed' | null;
  }): Promise<void> {
    const { order } = await orders.createWithIdempotencyKey({
      userId: 7,
      customerEmail: 'buyer@example.com',
      totalAmount: 1_000,
    });
    if (state.paid) {
      await database.handle.db
        .updateTable('orders')
        .set({ status: 'paid' })
        .where('id', '=', order.id)
        .execute();
    }
    if (state.shipment) await orders.setShipmentStatus(order.id, state.shipment);
  }

  it('counts paid orders, requested and failed shipments into a new snapshot', async () => {
    const before = (await stock.takeSnapshot(nextSlot())).snapshot;
    await addOrder({ paid: false, shipment: null });
    await addOrder({ paid: true, shipment: null });
    await addOrder({ paid: true, shipment: 'requested' });
    await addOrder({ paid: true, shipment: 'requested' });
    await addOrder({ paid: true, shipment: 'failed' });
    const takenAt = nextSlot();

    const result = await stock.takeSnapshot(takenAt);

    expect(result.created).toBe(true);
    expect(result.snapshot).toEqual({
      id: expect.any(Number),
      takenAt,
      ordersPaid: before.ordersPaid + 4,
      shipmentsRequested: before.shipmentsRequested + 2,
      shipmentsFailed: before.shipmentsFailed + 1,
      createdAt: expect.stringMatching(ISO_UTC),
    });
  });

  it('returns the existing snapshot, unchanged, when one was already taken for that time', async () => {
    const takenAt = nextSlot();
    const first = await stock.takeSnapshot(takenAt);
    await addOrder({ paid: true, shipment: 'requested' });

    const retry = await stock.takeSnapshot(takenAt);

    expect(retry).toEqual({ snapshot: first.snapshot, created: false });
    const rows = await database.handle.db
      .selectFrom('stock_snapshots')
      .select('id')
      .where('taken_at', '=', takenAt)
      .execute();
    expect(rows).toHaveLength(1);
  });

  it('treats different spellings of the same instant as one snapshot', async () => {
    const takenAt = nextSlot(); // 2025-01-31T09:0m:00.000Z
    const first = await stock.takeSnapshot(takenAt.replace('.000Z', 'Z'));
    const second = await stock.takeSnapshot(takenAt.replace('Z', '+00:00'));

    expect(first.snapshot.takenAt).toBe(takenAt);
    expect(second).toEqual({ snapshot: first.snapshot, created: false });
  });

  it('writes exactly one snapshot when calls for the same time race', async () => {
    const takenAt = nextSlot();

    const results = await Promise.all(Array.from({ length: 5 }, () => stock.takeSnapshot(takenAt)));

    expect(results.filter((r) => r.created)).toHaveLength(1);
    expect(new Set(results.map((r) => r.snapshot.id)).size).toBe(1);
  });

  it('rejects a takenAt that is not a timestamp, writing nothing', async () => {
    const count = async () =>
      (await database.handle.db.selectFrom('stock_snapshots').select('id').execute()).length;
    const rowsBefore = await count();

    await expect(stock.takeSnapshot('five past nine')).rejects.toThrow(/not a timestamp/);
    expect(await count()).toBe(rowsBefore);
  });

  it('lists snapshots newest first, up to the limit', async () => {
    const older = (await stock.takeSnapshot(nextSlot())).snapshot;
    const newer = (await stock.takeSnapshot(nextSlot())).snapshot;

    const listed = await stock.listSnapshots();
    expect(listed.slice(0, 2)).toEqual([newer, older]);
    const takenAts = listed.map((s) => s.takenAt);
    expect(takenAts).toEqual([...takenAts].sort().reverse());

    expect(await stock.listSnapshots({ limit: 1 })).toEqual([newer]);
  });
});
