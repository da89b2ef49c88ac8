import { freePort } from '../../harness/ports';
import { ApplicationFailure } from '@temporalio/common';
import { createWarehouseClient } from '../../src/activities/warehouse-client';
import { FailureType } from '../../src/shared/errors';
import {
  createWarehouseSimulator,
  type WarehouseSimulator,
} from '../../harness/partners/warehouse-simulator';
import { rejectionOf } from '../support/failures';

// The warehouse client against the simulator over real HTTP: every answer becomes a receipt or
// a failure whose type tells the retry budget what to do.
let warehouse: WarehouseSimulator;
let baseUrl: string;

beforeAll(async () => {
  warehouse = createWarehouseSimulator();
  baseUrl = await warehouse.listen(0);
});
afterAll(async () => {
  await warehouse?.close();
});
beforeEach(() => warehouse.reset());

const request = (timeoutMs = 2_000) =>
  createWarehouseClient({ baseUrl, timeoutMs }).requestShipment({
    orderId: 12,
    idempotencyKey: 'order-12-shipment',
  });

const failureOf = (promise: Promise<unknown>) => rejectionOf(promise, ApplicationFailure);

describe('warehouse client', () => {
  it('creates the shipment once per idempotency key and reports a replay as such', async () => {
    const first = await request();
    const again = await request();
    expect(first).toEqual({ shipmentId: 'shp_1', replayed: false });
    expect(again).toEqual({ shipmentId: 'shp_1', replayed: true });
    expect(warehouse.shipments.size).toBe(1);
    expect(warehouse.requests.map((r) => r.idempotencyKey)).toEqual([
      'order-12-shipment',
      'order-12-shipment',
    ]);
  });

  it.each([400, 404, 409, 422])(
    'treats %i as a rejected request that no retry can fix',
    async (status) => {
      warehouse.setMode({ kind: 'reject', status });
      const failure = await failureOf(request());
      expect(failure).toMatchObject({ type: FailureType.WarehouseRejected, nonRetryable: true });
    },
  );

  it.each([
    ['408', { kind: 'reject', status: 408 } as const],
    ['500', { kind: 'unavailable', status: 500 } as const],
    ['503', { kind: 'unavailable', status: 503 } as const],
  ])('treats %s as an outage worth retrying', async (_label, mode) => {
    warehouse.setMode(mode);
    const failure = await failureOf(request());
    expect(failure).toMatchObject({ type: FailureType.WarehouseUnavailable, nonRetryable: false });
  });

  it('reads Retry-After in seconds from a 429', async () => {
    warehouse.setMode({ kind: 'rate_limit', retryAfter: '42' });
    const failure = await failureOf(request());
    expect(failure.type).toBe(FailureType.WarehouseRateLimited);
    expect(failure.details?.[0]).toMatchObject({ retryAfterMs: 42_000 });
  });

  it('reads Retry-After as an HTTP date from a 429', async () => {
    const at = new Date(Date.now() + 90_000).toUTCString();
    warehouse.setMode({ kind: 'rate_limit', retryAfter: at });
    const failure = await failureOf(request());
    const { retryAfterMs } = failure.details?.[0] as { retryAfterMs: number };
    expect(retryAfterMs).toBeGreaterThan(85_000);
    expect(retryAfterMs).toBeLessThanOrEqual(90_000);
  });

  it('abandons a call that takes longer than its timeout, as a retryable outage', async () => {
    warehouse.setMode({ kind: 'slow', delayMs: 1_000 }, 1);
    const failure = await failureOf(request(200));
    expect(failure).toMatchObject({ type: FailureType.WarehouseUnavailable });
    expect(failure.message).toMatch(/did not answer within 200 ms/);
  });

  it('treats a refused connection as a retryable outage', async () => {
    const port = await freePort();
    const failure = await failureOf(
      createWarehouseClient({
        baseUrl: `http://127.0.0.1:${port}`,
        timeoutMs: 1_000,
      }).requestShipment({
        orderId: 1,
        idempotencyKey: 'k',
      }),
    );
    expect(failure).toMatchObject({ type: FailureType.WarehouseUnavailable });
    expect(failure.message).toMatch(/unreachable/);
  });
});

describe('warehouse client: cancel', () => {
  const cancel = (orderId = 12) =>
    createWarehouseClient({ baseUrl, timeoutMs: 2_000 }).cancelShipment({
      orderId,
      shipmentRef: `order-${orderId}-shipment`,
      idempotencyKey: `order-${orderId}-shipment-cancel`,
    });

  it('reports a cancel, and a repeated one as replayed', async () => {
    await request();
    expect(await cancel()).toEqual({ outcome: 'cancelled', replayed: false });
    expect(await cancel()).toEqual({ outcome: 'cancelled', replayed: true });
  });

  it("reads the partner's already_shipped as an answer, not a failure", async () => {
    await request();
    await warehouse.ship('order-12-shipment');
    expect(await cancel()).toEqual({ outcome: 'already_shipped', replayed: false });
  });

  it('turns an unknown shipment into a non-retryable rejection, and an outage into a retryable one', async () => {
    const unknown = await failureOf(cancel(404));
    expect(unknown).toMatchObject({ type: FailureType.WarehouseRejected, nonRetryable: true });
    expect(unknown.message).toBe('warehouse rejected the cancel with 404');
    await request();
    warehouse.setMode({ kind: 'unavailable', status: 503 }, 1);
    expect(await failureOf(cancel())).toMatchObject({
      type: FailureType.WarehouseUnavailable,
      nonRetryable: false,
    });
    warehouse.setMode({ kind: 'rate_limit', retryAfter: '7' }, 1);
    const limited = await failureOf(cancel());
    expect(limited.type).toBe(FailureType.WarehouseRateLimited);
    expect(limited.details?.[0]).toMatchObject({ retryAfterMs: 7_000 });
    // A 409 that is not the partner's already_shipped is not taken for one.
    warehouse.setMode({ kind: 'reject', status: 409 }, 1);
    expect(await failureOf(cancel())).toMatchObject({ type: FailureType.WarehouseRejected });
  });
});
