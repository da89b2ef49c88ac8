import type { Client } from '@temporalio/client';
import type { SignalDefinition } from '@temporalio/common';
import {
  createOrdersRepository,
  createPaymentsRepository,
  type OrdersRepository,
} from '../../src/db';
import type { TestDatabase, TestDatabaseHandle } from '../../harness/databases';
import { OrderIdSearchAttribute } from '../../src/shared/search-attributes';
import { quietActivityEnvironment } from './activity-environment';

// For the tests that call the activities of an event's intake directly (refunds, disputes): a
// client that records the hand-over, what the hand-over must send, and a database with paid
// orders to match events to.

/** A Temporal client whose signal-with-start, the hand-overs' one effect, only records. */
export function recordingClient(): { client: Client; signalWithStart: jest.Mock } {
  const signalWithStart = jest.fn().mockResolvedValue(undefined);
  return { client: { workflow: { signalWithStart } } as unknown as Client, signalWithStart };
}

/**
 * The arguments of the one signal-with-start that hands `event` to order `orderId`: `order-<id>`
 * started if need be on the activity's task queue (the mock environment's `test`), with the
 * order's ID in its memo and its `OrderId` search attribute.
 */
export function orderHandOver<E>(orderId: number, signal: SignalDefinition<[E]>, event: E) {
  return [
    'orderWorkflow',
    {
      workflowId: `order-${orderId}`,
      taskQueue: 'test',
      args: [{ orderId }],
      signal,
      signalArgs: [event],
      memo: { orderId },
      typedSearchAttributes: [{ key: OrderIdSearchAttribute, value: orderId }],
    },
  ] as const;
}

/** Runs a call of an activity inside an activity context. */
export function inActivity<R>(call: () => Promise<R>): Promise<R> {
  return quietActivityEnvironment().run(call);
}

/** The database of one `describe.each(testDatabases)` block of intake-activity tests. */
export interface IntakeDatabase {
  /** Open from the block's `beforeAll` on: read it inside tests and hooks. */
  readonly handle: TestDatabaseHandle;
  readonly orders: OrdersRepository;
  /** `${prefix}_${n}`: unique in the file, since the database outlives each test. */
  unique: (prefix: string) => string;
  /** An order paid in full by one recorded payment, under a provider reference of its own. */
  paidOrder(fields?: {
    totalAmount?: number;
    userId?: number;
  }): Promise<{ orderId: number; userId: number; paymentRef: string }>;
}

/** Opens a database of the dialect for the enclosing describe block, and closes it after. */
export function useIntakeDatabase(create: TestDatabase['create']): IntakeDatabase {
  let open: TestDatabaseHandle | undefined;
  let seq = 0;
  beforeAll(async () => {
    open = await create();
  });
  afterAll(() => open?.close());

  const fixture: IntakeDatabase = {
    get handle() {
      if (!open) throw new Error('the test database is not open yet: use it in a test or hook');
      return open;
    },
    get orders() {
      return createOrdersRepository(fixture.handle.db);
    },
    unique: (prefix) => `${prefix}_${++seq}`,
    async paidOrder({ totalAmount = 5_000, userId = 6 } = {}) {
      const { order } = await fixture.orders.createWithIdempotencyKey({
        userId,
        customerEmail: 'buyer@example.com',
        totalAmount,
      });
      const paymentRef = fixture.unique('stripe~pi');
      await createPaymentsRepository(fixture.handle.db).recordPayment({
        providerEventId: fixture.unique('evt_pay'),
        orderId: order.id,
        amount: totalAmount,
        paymentRef,
      });
      return { orderId: order.id, userId, paymentRef };
    },
  };
  return fixture;
}
