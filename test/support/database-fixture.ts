import type { Kysely, Selectable } from 'kysely';
import { createDatabase } from '../../src/db/connection';
import type { Database } from '../../src/db/schema';
import { createOrdersRepository, type Order } from '../../src/db/repositories/orders';
import {
  createPaymentsRepository,
  type RecordPaymentInput,
  type RecordPaymentResult,
} from '../../src/db/repositories/payments';
import type { TestDatabase, TestDatabaseHandle } from '../../harness/databases';

/**
 * The database of one `describe.each(testDatabases)` block and the rows its tests start from.
 * Read it inside tests and hooks: it opens in a `beforeAll`, after the block itself has run.
 */
export interface DatabaseFixture {
  readonly handle: TestDatabaseHandle;
  /** `${prefix}_${n}`: unique in the file, since the database outlives each test. */
  unique: (prefix: string) => string;
  /**
   * A repository of the open database, for the block's own scope: it is made again on each use,
   * so it always reads the database open now (repositories hold no state but the handle).
   */
  repository<R extends object>(create: (db: Kysely<Database>) => R): R;
  /** A pending order of `totalAmount` (user 7, buyer@example.com). */
  newOrder(totalAmount?: number): Promise<Order>;
  /** A pending order of 5 000 paid by a payment under a payment reference of its own. */
  paidOrder(): Promise<{ orderId: number; paymentRef: string }>;
  /** Records a payment of 5 000 (unless `input` says otherwise) under an event ID of its own. */
  pay(orderId: number, input?: Partial<RecordPaymentInput>): Promise<RecordPaymentResult>;
  /** The stored row of a ledger's event, for the columns no read of its repository returns. */
  eventRow<T extends 'refunds' | 'disputes'>(
    ledger: T,
    eventId: string,
  ): Promise<Selectable<Database[T]>>;
  /**
   * Makes `calls` calls (the i-th with `i`) at once, spread over this handle and two more of the
   * same database:
   * separate pools on PostgreSQL; on SQLite they share the file's connection in this process
   * (separate processes: sqlite-processes.test.ts).
   */
  acrossHandles<R, T>(
    create: (db: Kysely<Database>) => R,
    calls: number,
    call: (repository: R, i: number) => Promise<T>,
  ): Promise<T[]>;
}

/**
 * Opens a database of the dialect for the enclosing describe block, and closes (deletes) it
 * after: one for the whole block, or with `perTest` a fresh one for each test; with `migrate:
 * false` its schema is empty (tests of the migrations themselves).
 */
export function useTestDatabase(
  create: TestDatabase['create'],
  { perTest = false, migrate = true } = {},
): DatabaseFixture {
  let open: TestDatabaseHandle | undefined;
  let seq = 0;
  (perTest ? beforeEach : beforeAll)(async () => {
    open = await create({ migrate });
  });
  (perTest ? afterEach : afterAll)(() => open?.close());

  const fixture: DatabaseFixture = {
    get handle() {
      if (!open) throw new Error('the test database is not open yet: use it in a test or hook');
      return open;
    },
    unique: (prefix) => `${prefix}_${++seq}`,
    repository: (create) =>
      new Proxy({} as ReturnType<typeof create>, {
        get: (_target, key) => Reflect.get(create(fixture.handle.db), key) as unknown,
      }),
    async newOrder(totalAmount = 5_000) {
      const { order } = await createOrdersRepository(fixture.handle.db).createWithIdempotencyKey({
        userId: 7,
        customerEmail: 'buyer@example.com',
        totalAmount,
      });
      return order;
    },
    async paidOrder() {
      const { id: orderId } = await fixture.newOrder();
      const paymentRef = fixture.unique('stripe~pi');
      await fixture.pay(orderId, { paymentRef });
      return { orderId, paymentRef };
    },
    pay: (orderId, input = {}) =>
      createPaymentsRepository(fixture.handle.db).recordPayment({
        providerEventId: fixture.unique('evt_pay'),
        orderId,
        amount: 5_000,
        ...input,
      }),
    eventRow: (ledger: 'refunds' | 'disputes', eventId) =>
      fixture.handle.db
        .selectFrom(ledger)
        .selectAll()
        .where('provider_event_id', '=', eventId)
        .executeTakeFirstOrThrow() as never,
    async acrossHandles(create, calls, call) {
      const others = [createDatabase(fixture.handle.url), createDatabase(fixture.handle.url)];
      try {
        const repositories = [fixture.handle, ...others].map((handle) => create(handle.db));
        return await Promise.all(
          Array.from({ length: calls }, (_, i) => call(repositories[i % repositories.length]!, i)),
        );
      } finally {
        await Promise.all(others.map((other) => other.close()));
      }
    },
  };
  return fixture;
}
