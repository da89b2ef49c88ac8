import { sql } from 'kysely';
import { createDatabase } from '../../src/db/connection';
import { knownMigrations, migrateToLatest } from '../../src/db/migrate';
import { createOrdersRepository } from '../../src/db/repositories/orders';
import { testDatabases, type TestDatabaseHandle } from '../support/databases';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

// Matched by message, not with toThrow: better-sqlite3 builds its errors in the first jest
// context that loaded it, so in later test files they fail toThrow's Error check.
const failure = (message: RegExp) => ({ message: expect.stringMatching(message) });

describe.each(testDatabases)('migrations ($name)', ({ create }) => {
  let handle: TestDatabaseHandle;
  beforeEach(async () => {
    handle = await create({ migrate: false });
  });
  afterEach(() => handle?.close());

  it('applies every migration on an empty database and nothing on a second run', async () => {
    expect(await migrateToLatest(handle.db)).toEqual(knownMigrations());
    expect(await migrateToLatest(handle.db)).toEqual([]);

    const tables = (await handle.db.introspection.getTables()).map((t) => t.name);
    expect(tables).toEqual(expect.arrayContaining(['orders', 'payments']));
  });

  it('applies each migration once when two processes migrate at the same moment', async () => {
    const other = createDatabase(handle.url);
    try {
      const [first, second] = await Promise.all([
        migrateToLatest(handle.db),
        migrateToLatest(other.db),
      ]);
      expect([...first, ...second]).toEqual(knownMigrations());
    } finally {
      await other.close();
    }
  });
});

describe.each(testDatabases)('schema constraints ($name)', ({ create }) => {
  let handle: TestDatabaseHandle;
  beforeAll(async () => {
    handle = await create();
  });
  afterAll(() => handle?.close());

  async function insertOrder(): Promise<number> {
    const { id } = await handle.db
      .insertInto('orders')
      .values({ user_id: 1, customer_email: 'a@example.com', total_amount: 100 })
      .returning('id')
      .executeTakeFirstOrThrow();
    return id;
  }

  it('rejects a second payment row with the same provider_event_id', async () => {
    const orderId = await insertOrder();
    const payment = { order_id: orderId, provider_event_id: 'evt_unique', amount: 100 };
    await handle.db.insertInto('payments').values(payment).execute();
    await expect(handle.db.insertInto('payments').values(payment).execute()).rejects.toMatchObject(
      failure(/unique/i),
    );
  });

  it('rejects a payment whose order does not exist', async () => {
    await expect(
      handle.db
        .insertInto('payments')
        .values({ order_id: 987_654, provider_event_id: 'evt_orphan', amount: 1 })
        .execute(),
    ).rejects.toMatchObject(failure(/foreign key/i));
  });

  it('rejects an order status outside pending/paid and a shipment status outside requested/failed', async () => {
    const orderId = await insertOrder();
    const update = (values: Record<string, string>) =>
      handle.db
        .updateTable('orders')
        .set(values as never)
        .where('id', '=', orderId)
        .execute();
    await expect(update({ status: 'shipped' })).rejects.toMatchObject(failure(/check/i));
    await expect(update({ shipment_status: 'lost' })).rejects.toMatchObject(failure(/check/i));
  });

  it('never hands out the ID of a deleted order again', async () => {
    const deleted = await insertOrder();
    await handle.db.deleteFrom('orders').where('id', '=', deleted).execute();
    expect(await insertOrder()).toBeGreaterThan(deleted);
  });

  it('fills created_at and updated_at by default with timestamps read back as ISO-8601 UTC', async () => {
    const before = Date.now();
    const order = await createOrdersRepository(handle.db).findById(await insertOrder());
    expect(order?.createdAt).toMatch(ISO_UTC);
    expect(order?.updatedAt).toBe(order?.createdAt);
    // The database's clock and ours agree within a few seconds on one machine.
    expect(Math.abs(Date.parse(order!.createdAt) - before)).toBeLessThan(5_000);
  });

  it('reads a timestamp back as the same instant it was written', async () => {
    const written = '2024-02-29T23:59:58.123Z';
    const { id } = await handle.db
      .insertInto('orders')
      .values({
        user_id: 1,
        customer_email: 'a@example.com',
        total_amount: 1,
        confirmation_sent_at: written,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const order = await createOrdersRepository(handle.db).findById(id);
    expect(order?.confirmationSentAt).toBe(written);
    const { raw } = await sql<{
      raw: unknown;
    }>`select confirmation_sent_at as raw from orders where id = ${id}`
      .execute(handle.db)
      .then((r) => r.rows[0]!);
    expect(raw).toBe(written);
  });
});
