import { sql } from 'kysely';
import { knownMigrations, migrateToLatest } from '../../src/db/migrate';
import { migrationPoints } from '../../dev/migrations/points';
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
});

// The real crash (a process killed between statements) and two real processes are in
// migrations-crash.test.ts; here a migration fails at every one of its points, in-process.
describe.each(testDatabases)('a migration that fails midway ($name)', ({ create }) => {
  let reference: TestDatabaseHandle;
  beforeAll(async () => {
    reference = await create();
  });
  afterAll(() => reference?.close());

  it('is rolled back whole at every point of every migration, and the next run applies it', async () => {
    const points = await migrationPoints();
    expect(points.length).toBeGreaterThan(knownMigrations().length);
    for (const point of points) {
      const handle = await create({ migrate: false });
      try {
        await expect(
          migrateToLatest(handle.db, {
            atPoint: (reached) => {
              if (reached === point) throw new Error(`interrupted at ${point}`);
            },
          }),
        ).rejects.toMatchObject({ message: expect.stringContaining(`interrupted at ${point}`) });

        const failed = point.slice(0, point.indexOf('#'));
        const rest = knownMigrations().slice(knownMigrations().indexOf(failed));
        expect({ point, applied: await migrateToLatest(handle.db) }).toEqual({
          point,
          applied: rest,
        });
        expect({ point, schema: await schemaOf(handle) }).toEqual({
          point,
          schema: await schemaOf(reference),
        });
      } finally {
        await handle.close();
      }
    }
  });
});

/** Every table with its columns, kysely's own included. */
async function schemaOf(handle: TestDatabaseHandle): Promise<Record<string, string[]>> {
  const tables = await handle.db.introspection.getTables({ withInternalKyselyTables: true });
  return Object.fromEntries(tables.map((t) => [t.name, t.columns.map((c) => c.name).sort()]));
}

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
