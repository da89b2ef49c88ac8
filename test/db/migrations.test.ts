import { sql, type Kysely, type Migration } from 'kysely';
import { knownMigrations, migrateToLatest } from '../../src/db/migrate';
import { migrationPoints } from '../../harness/migrations/points';
import { createOrdersRepository } from '../../src/db/repositories/orders';
import type { Database } from '../../src/db/schema';
import { testDatabases, type TestDatabaseHandle } from '../../harness/databases';
import { useTestDatabase } from '../support/database-fixture';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

// Matched by message. (Written when toThrow failed on SQLite's errors in any test file after the
// first of its jest worker; test/support/sqlite-errors.ts makes them this file's Errors now.)
const failure = (message: RegExp) => ({ message: expect.stringMatching(message) });

/** A payments row written straight to the table, past the repository's checks. */
const insertPayment = (
  db: Kysely<Database>,
  order_id: number,
  provider_event_id: string,
  amount = 1,
) => db.insertInto('payments').values({ order_id, provider_event_id, amount }).execute();

describe.each(testDatabases)('migrations ($name)', ({ create }) => {
  const database = useTestDatabase(create, { perTest: true, migrate: false });

  it('applies every migration on an empty database and nothing on a second run', async () => {
    expect(await migrateToLatest(database.handle.db)).toEqual(knownMigrations());
    expect(await migrateToLatest(database.handle.db)).toEqual([]);

    const tables = (await database.handle.db.introspection.getTables()).map((t) => t.name);
    expect(tables).toEqual(expect.arrayContaining(['orders', 'payments']));
  });
});

// The real crash (a process killed between statements) and two real processes are in
// migrations-crash.test.ts; here a migration fails at every one of its points, in-process.
describe.each(testDatabases)('a migration that fails midway ($name)', ({ create }) => {
  const reference = useTestDatabase(create);

  it('is rolled back whole at every point of every migration, and the next run applies it', async () => {
    const scratch = await create({ migrate: false });
    const points = await migrationPoints(scratch).finally(() => scratch.close());
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
          schema: await schemaOf(reference.handle),
        });
      } finally {
        await handle.close();
      }
    }
  });
});

// SQLite changes a table by building a new one, copying, dropping the old and renaming: with
// foreign keys enforced, the drop fails, and inside a transaction they cannot be switched off.
describe('a SQLite migration that rebuilds a referenced table', () => {
  const sqlite = testDatabases.find((d) => d.name === 'sqlite')!;
  let handle: TestDatabaseHandle;
  let orderId: number;
  beforeEach(async () => {
    handle = await sqlite.create();
    ({ id: orderId } = await handle.db
      .insertInto('orders')
      .values({ user_id: 1, customer_email: 'a@example.com', total_amount: 100 })
      .returning('id')
      .executeTakeFirstOrThrow());
    await insertPayment(handle.db, orderId, 'evt_rebuild', 100);
  });
  afterEach(() => handle?.close());

  const withExtra = (name: string, up: Migration['up']) => ({
    migrations: {
      ...Object.fromEntries(knownMigrations().map((n) => [n, { up: noop }])),
      [name]: { up },
    },
  });
  const noop = () => Promise.resolve();

  it('is applied, its references intact', async () => {
    const rebuild = async (db: Kysely<unknown>) => {
      await sql`create table orders_rebuilt (id integer primary key autoincrement, note text)`.execute(
        db,
      );
      await sql`insert into orders_rebuilt (id) select id from orders`.execute(db);
      await sql`drop table orders`.execute(db);
      await sql`alter table orders_rebuilt rename to orders`.execute(db);
    };
    expect(await migrateToLatest(handle.db, withExtra('9001_rebuild_orders', rebuild))).toEqual([
      '9001_rebuild_orders',
    ]);
    const { rows } = await sql<{ id: number }>`select id from orders`.execute(handle.db);
    expect(rows).toEqual([{ id: orderId }]);
    // Enforced again afterwards.
    await expect(insertPayment(handle.db, orderId + 1, 'evt_orphan')).rejects.toMatchObject(
      failure(/foreign key/i),
    );
  });

  it('that leaves a reference dangling is rolled back and named', async () => {
    const orphan = (db: Kysely<unknown>) => sql`delete from orders`.execute(db).then(noop);
    await expect(
      migrateToLatest(handle.db, withExtra('9002_lose_orders', orphan)),
    ).rejects.toMatchObject(
      failure(
        /9002_lose_orders failed and was rolled back.*foreign key finds no row \(first: payments -> orders\)/,
      ),
    );
    const { rows } = await sql<{ id: number }>`select id from orders`.execute(handle.db);
    expect(rows).toEqual([{ id: orderId }]);
    expect(await migrateToLatest(handle.db, withExtra('9002_lose_orders', noop))).toEqual([
      '9002_lose_orders',
    ]);
  });
});

/** Every table with its columns, kysely's own included. */
async function schemaOf(handle: TestDatabaseHandle): Promise<Record<string, string[]>> {
  const tables = await handle.db.introspection.getTables({ withInternalKyselyTables: true });
  return Object.fromEntries(tables.map((t) => [t.name, t.columns.map((c) => c.name).sort()]));
}

describe.each(testDatabases)('schema constraints ($name)', ({ create }) => {
  const database = useTestDatabase(create);

  async function insertOrder(): Promise<number> {
    const { id } = await database.handle.db
      .insertInto('orders')
      .values({ user_id: 1, customer_email: 'a@example.com', total_amount: 100 })
      .returning('id')
      .executeTakeFirstOrThrow();
    return id;
  }

  it('rejects a second payment row with the same provider_event_id', async () => {
    const orderId = await insertOrder();
    await insertPayment(database.handle.db, orderId, 'evt_unique', 100);
    await expect(
      insertPayment(database.handle.db, orderId, 'evt_unique', 100),
    ).rejects.toMatchObject(failure(/unique/i));
  });

  it('rejects a payment whose order does not exist', async () => {
    await expect(insertPayment(database.handle.db, 987_654, 'evt_orphan')).rejects.toMatchObject(
      failure(/foreign key/i),
    );
  });

  it('rejects an order status outside pending/paid and a shipment status outside requested/failed', async () => {
    const orderId = await insertOrder();
    const update = (values: Record<string, string>) =>
      database.handle.db
        .updateTable('orders')
        .set(values as never)
        .where('id', '=', orderId)
        .execute();
    await expect(update({ status: 'shipped' })).rejects.toMatchObject(failure(/check/i));
    await expect(update({ shipment_status: 'lost' })).rejects.toMatchObject(failure(/check/i));
  });

  it('never hands out the ID of a deleted order again', async () => {
    const deleted = await insertOrder();
    await database.handle.db.deleteFrom('orders').where('id', '=', deleted).execute();
    expect(await insertOrder()).toBeGreaterThan(deleted);
  });

  it('fills created_at and updated_at by default with timestamps read back as ISO-8601 UTC', async () => {
    const before = Date.now();
    const order = await createOrdersRepository(database.handle.db).findById(await insertOrder());
    expect(order?.createdAt).toMatch(ISO_UTC);
    expect(order?.updatedAt).toBe(order?.createdAt);
    // The database's clock and ours agree within a few seconds on one machine.
    expect(Math.abs(Date.parse(order!.createdAt) - before)).toBeLessThan(5_000);
  });

  it('reads a timestamp back as the same instant it was written', async () => {
    const written = '2024-02-29T23:59:58.123Z';
    const { id } = await database.handle.db
      .insertInto('orders')
      .values({
        user_id: 1,
        customer_email: 'a@example.com',
        total_amount: 1,
        confirmation_sent_at: written,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    const order = await createOrdersRepository(database.handle.db).findById(id);
    expect(order?.confirmationSentAt).toBe(written);
    const { raw } = await sql<{
      raw: unknown;
    }>`select confirmation_sent_at as raw from orders where id = ${id}`
      .execute(database.handle.db)
      .then((r) => r.rows[0]!);
    expect(raw).toBe(written);
  });
});

// 0011 lets shipment_status be 'cancelled'. SQLite cannot alter 0001's CHECK, so it rebuilds the
// orders table: rows, foreign keys and the never-reused ID counter must come through it.
describe.each(testDatabases)('0011 shipment cancelled ($name)', ({ create }) => {
  const database = useTestDatabase(create, { perTest: true, migrate: false });

  it('keeps every order, its references and its ID counter, and allows cancelled only', async () => {
    // Every migration before 0011: the run stops at 0011's first statement and rolls it back.
    await expect(
      migrateToLatest(database.handle.db, {
        atPoint: (point) => {
          if (point.startsWith('0011_shipment_cancelled#')) throw new Error('stop before 0011');
        },
      }),
    ).rejects.toMatchObject(failure(/stop before 0011/));
    const orders = createOrdersRepository(database.handle.db);
    const ids: number[] = [];
    for (const key of ['a', 'b', 'c']) {
      const { order } = await orders.createWithIdempotencyKey({
        userId: 1,
        customerEmail: 'buyer@example.com',
        totalAmount: 5400,
        idempotencyKey: `key-${key}`,
      });
      ids.push(order.id);
    }
    await orders.setShipmentStatus(ids[0]!, 'requested');
    await insertPayment(database.handle.db, ids[0]!, 'evt_1', 5400);
    // The highest ID gone: the next order must still not reuse it.
    await database.handle.db.deleteFrom('orders').where('id', '=', ids[2]!).execute();
    const rowsBefore = await database.handle.db
      .selectFrom('orders')
      .selectAll()
      .orderBy('id')
      .execute();

    expect(await migrateToLatest(database.handle.db)).toContain('0011_shipment_cancelled');

    // Every row with every column it had, unchanged (later migrations may add columns).
    const rowsAfter = await database.handle.db
      .selectFrom('orders')
      .selectAll()
      .orderBy('id')
      .execute();
    expect(rowsAfter).toHaveLength(rowsBefore.length);
    expect(rowsAfter).toMatchObject(rowsBefore);
    expect(await orders.setShipmentStatus(ids[0]!, 'cancelled')).toBe(true);
    expect((await orders.findById(ids[0]!))?.shipmentStatus).toBe('cancelled');
    await expect(
      database.handle.db
        .updateTable('orders')
        .set({ shipment_status: 'shipped' as never })
        .where('id', '=', ids[1]!)
        .execute(),
    ).rejects.toMatchObject(failure(/check/i));
    await expect(insertPayment(database.handle.db, 999_999, 'evt_2')).rejects.toMatchObject(
      failure(/foreign key/i),
    );
    const { order: next } = await orders.createWithIdempotencyKey({
      userId: 1,
      customerEmail: 'buyer@example.com',
      totalAmount: 5400,
      idempotencyKey: 'key-d',
    });
    expect(next.id).toBeGreaterThan(ids[2]!);
  });
});
