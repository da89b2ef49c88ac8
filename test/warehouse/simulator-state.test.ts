import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  createWarehouseSimulator,
  type WarehouseSimulator,
} from '../../harness/partners/warehouse-simulator';

// The simulator of `npm start` keeps its shipments in a file, like a partner's database: a
// stack stopped or killed and started again still answers a repeated request as a replay.
let dir: string;
const open: WarehouseSimulator[] = [];

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'order-payments-warehouse-'));
});
afterEach(async () => {
  await Promise.all(open.splice(0).map((s) => s.close()));
  await rm(dir, { recursive: true, force: true });
});

async function start(stateFile: string) {
  const simulator = createWarehouseSimulator({ stateFile });
  open.push(simulator);
  const url = await simulator.listen(0);
  const ship = (orderId: number) =>
    fetch(`${url}/v1/shipments`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': `order-${orderId}-shipment`,
      },
      body: JSON.stringify({ order_id: orderId }),
    });
  return { simulator, ship };
}

describe('warehouse simulator state file', () => {
  it('remembers shipments and requests across a restart: a repeat is a replay, numbering goes on', async () => {
    const stateFile = path.join(dir, 'nested', 'warehouse.json');
    const first = await start(stateFile);
    const created = await first.ship(1);
    expect(created.status).toBe(201);
    const shipment = (await created.json()) as { shipment_id: string };
    // Killed right after answering: nothing of close() runs, the answer was already saved.
    open.splice(0);
    await first.simulator.app.close();

    const second = await start(stateFile);
    const replay = await second.ship(1);
    expect(replay.status).toBe(200);
    expect(replay.headers.get('idempotent-replayed')).toBe('true');
    expect(await replay.json()).toMatchObject({ shipment_id: shipment.shipment_id });
    const next = await second.ship(2);
    expect(await next.json()).toMatchObject({ shipment_id: 'shp_2' });
    expect(second.simulator.shipments.size).toBe(2);
    expect(second.simulator.requests.map((r) => r.status)).toEqual([201, 200, 201]);
  });

  it('keeps every shipment of concurrent requests (writes never land out of order)', async () => {
    const stateFile = path.join(dir, 'warehouse.json');
    const first = await start(stateFile);
    const answers = await Promise.all(Array.from({ length: 30 }, (_, i) => first.ship(i + 1)));
    expect(answers.map((a) => a.status)).toEqual(Array(30).fill(201));
    await first.simulator.close();
    open.splice(0);

    const second = await start(stateFile);
    expect(second.simulator.shipments.size).toBe(30);
  });

  it('refuses a file that is not its own, naming it', async () => {
    const stateFile = path.join(dir, 'not-ours.json');
    await writeFile(stateFile, '{"hello":"world"}');
    expect(() => createWarehouseSimulator({ stateFile })).toThrow(
      `${stateFile} is not a warehouse simulator state file`,
    );
  });
});
