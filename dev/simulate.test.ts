import { main } from './simulate';
import {
  createWarehouseSimulator,
  type WarehouseSimulator,
} from '../harness/partners/warehouse-simulator';

// `npm run simulate -- warehouse <mode>` against a running simulator: the mode switches what
// shipment requests and the health endpoint the doctor asks answer.
let simulator: WarehouseSimulator;
let url: string;

beforeAll(async () => {
  simulator = createWarehouseSimulator();
  url = await simulator.listen(0);
});
afterAll(() => simulator.close());

async function simulate(...argv: string[]) {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(
    argv,
    { out: (t) => out.push(t), err: (t) => err.push(t) },
    {
      WAREHOUSE_API_URL: url,
    },
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
}

const health = async () => (await fetch(new URL('/v1/health', url))).status;
const ship = async (orderId: number) =>
  (
    await fetch(new URL('/v1/shipments', url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': `k-${orderId}` },
      body: JSON.stringify({ order_id: orderId }),
    })
  ).status;

it('takes the warehouse down and back, as the shipments and the health endpoint answer', async () => {
  expect(await simulate('warehouse', 'down')).toMatchObject({
    code: 0,
    out: expect.stringContaining('down, answering 503'),
  });
  expect(await health()).toBe(503);
  expect(await ship(1)).toBe(503);
  expect((await simulate('warehouse', 'status')).out).toContain('down, answering 503');

  expect((await simulate('warehouse', 'reject', '422')).code).toBe(0);
  expect(await ship(2)).toBe(422);
  expect(await health()).toBe(200);

  expect((await simulate('warehouse', 'ratelimit', '7', '--times', '1')).out).toContain(
    'Retry-After: 7 for the next 1 request(s)',
  );
  expect(await ship(3)).toBe(429);
  expect(await ship(3)).toBe(201);

  expect((await simulate('warehouse', 'slow', '300')).code).toBe(0);
  const started = Date.now();
  expect(await health()).toBe(200);
  expect(Date.now() - started).toBeGreaterThanOrEqual(250);

  expect((await simulate('warehouse', 'ok')).out).toContain('ok, shipments are created');
  expect(await ship(4)).toBe(201);
});

it('refuses a wrong command line with exit 2, and says when no simulator answers', async () => {
  expect((await simulate('warehouse', 'sideways')).code).toBe(2);
  expect((await simulate('mail', 'down')).code).toBe(2);
  expect((await simulate('warehouse', 'down', '404')).err).toContain('from 500 to 599');
  const code = await main(
    ['warehouse', 'ok'],
    { out: () => {}, err: () => {} },
    {
      WAREHOUSE_API_URL: 'http://127.0.0.1:1',
    },
  );
  expect(code).toBe(1);
});

it("ships an order's parcel, after which a cancel is too late", async () => {
  const order = 41;
  await fetch(new URL('/v1/shipments', url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': `order-${order}-shipment` },
    body: JSON.stringify({ order_id: order }),
  });
  expect(await simulate('warehouse', 'ship', String(order))).toMatchObject({
    code: 0,
    out: expect.stringContaining(`order ${order}'s shipment shp_`),
  });
  const cancel = await fetch(new URL(`/v1/shipments/order-${order}-shipment/cancel`, url), {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': 'c-41' },
    body: '{}',
  });
  expect(cancel.status).toBe(409);
  expect(await simulate('warehouse', 'ship', '42')).toMatchObject({
    code: 1,
    err: expect.stringContaining('no shipment for order 42'),
  });
  expect((await simulate('warehouse', 'ship')).code).toBe(2);
});
