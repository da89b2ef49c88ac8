import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  createWarehouseSimulator,
  type WarehouseSimulator,
} from '../../harness/partners/warehouse-simulator';

// The simulator's cancel follows a real partner's idempotency rules: a replayed key gets the
// first answer, whatever happened since; a key reused for another shipment is a 422; unknown
// shipments are 404; shipped ones 409 already_shipped; a second cancel under a new key is 200.
let simulator: WarehouseSimulator;
let url: string;
let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'order-payments-cancel-'));
  simulator = createWarehouseSimulator({ stateFile: path.join(dir, 'warehouse.json') });
  url = await simulator.listen(0);
});
afterEach(async () => {
  await simulator.close();
  await rm(dir, { recursive: true, force: true });
});

const ship = (orderId: number) =>
  fetch(`${url}/v1/shipments`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': `order-${orderId}-shipment` },
    body: JSON.stringify({ order_id: orderId }),
  });
const cancel = async (ref: string, key: string | undefined, body: unknown = {}) => {
  const response = await fetch(`${url}/v1/shipments/${encodeURIComponent(ref)}/cancel`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'idempotency-key': key } : {}) },
    body: JSON.stringify(body),
  });
  return {
    status: response.status,
    replayed: response.headers.get('idempotent-replayed') === 'true',
    body: (await response.json()) as Record<string, unknown>,
  };
};
const markShipped = (ref: string) =>
  fetch(`${url}/_simulator/shipments/${encodeURIComponent(ref)}`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ status: 'shipped' }),
  });

describe('warehouse simulator: cancel', () => {
  it('cancels a requested shipment, by its reference or its ID; a replayed key gets the same answer', async () => {
    const created = (await (await ship(1)).json()) as { shipment_id: string };
    const first = await cancel('order-1-shipment', 'k1');
    expect(first).toMatchObject({
      status: 200,
      replayed: false,
      body: { shipment_id: created.shipment_id, status: 'cancelled' },
    });
    const again = await cancel('order-1-shipment', 'k1');
    expect(again).toEqual({ ...first, replayed: true });
    // Another caller, another key: cancelling a cancelled shipment is done, not a conflict.
    const other = await cancel(created.shipment_id, 'k2');
    expect(other).toMatchObject({ status: 200, replayed: false, body: first.body });
    expect(simulator.shipments.get('order-1-shipment')?.status).toBe('cancelled');
    // Nothing left to ship.
    expect((await markShipped('order-1-shipment')).status).toBe(409);
  });

  it('answers 409 already_shipped once shipped, and replays it under the same key', async () => {
    await ship(2);
    expect((await markShipped('order-2-shipment')).status).toBe(200);
    const late = await cancel('order-2-shipment', 'k');
    expect(late).toMatchObject({ status: 409, body: { error: 'already_shipped' } });
    expect(await cancel('order-2-shipment', 'k')).toEqual({ ...late, replayed: true });
    expect(simulator.shipments.get('order-2-shipment')?.status).toBe('shipped');
  });

  it('answers 404 for an unknown shipment, 422 for a key reused on another, 400 without a key', async () => {
    await ship(3);
    await ship(4);
    expect((await cancel('order-99-shipment', 'k404')).status).toBe(404);
    expect((await cancel('order-3-shipment', 'k3')).status).toBe(200);
    const reused = await cancel('order-4-shipment', 'k3');
    expect(reused).toMatchObject({ status: 422, body: { error: 'idempotency_key_reused' } });
    expect(simulator.shipments.get('order-4-shipment')?.status).toBe('requested');
    expect((await cancel('order-4-shipment', undefined)).status).toBe(400);
    expect((await cancel('order-4-shipment', 'k4', { unknown: true })).status).toBe(400);
    expect(simulator.cancels.map((c) => [c.ref, c.status])).toEqual([
      ['order-99-shipment', 404],
      ['order-3-shipment', 200],
      ['order-4-shipment', 422],
      ['order-4-shipment', 400],
      ['order-4-shipment', 400],
    ]);
  });

  it('keeps no answer for an outage: the same key is tried afresh, and the failure modes apply', async () => {
    await ship(5);
    simulator.setMode({ kind: 'unavailable', status: 503 }, 1);
    expect((await cancel('order-5-shipment', 'k5')).status).toBe(503);
    expect(await cancel('order-5-shipment', 'k5')).toMatchObject({ status: 200, replayed: false });
  });

  it('remembers shipment states and cancel answers across a restart', async () => {
    await ship(6);
    await ship(7);
    await cancel('order-6-shipment', 'k6');
    await markShipped('order-7-shipment');
    await simulator.close();
    simulator = createWarehouseSimulator({ stateFile: path.join(dir, 'warehouse.json') });
    url = await simulator.listen(0);
    expect(await cancel('order-6-shipment', 'k6')).toMatchObject({ status: 200, replayed: true });
    expect(await cancel('order-7-shipment', 'k7')).toMatchObject({
      status: 409,
      body: { error: 'already_shipped' },
    });
    expect(simulator.cancels).toHaveLength(3);
  });
});
