import { providerPlayer, type ProviderName } from '../../harness/providers/player';
import { loadConfig } from '../../src/config';
import { eventually } from '../support/eventually';
import { TEST_STANDARD_SECRET, TEST_STRIPE_SECRET } from '../support/providers';
import { run, startStack, stopDevStacks } from '../support/dev-stack';

// Stripe and a Standard Webhooks sender played against `npm start`, end to end: deliveries signed
// by the providers' own libraries, in the patterns the real ones have (the same event twice at
// once, other events of the payment out of order, redeliveries on a backoff, signed afresh),
// and exactly one payment and one shipment per order out of it all.

afterEach(stopDevStacks);

const SETTINGS = {
  STRIPE_WEBHOOK_SECRETS: `${TEST_STRIPE_SECRET},whsec_the_secret_being_rolled_out_0001`,
  STANDARD_WEBHOOK_SECRETS: TEST_STANDARD_SECRET,
  SHOP_CURRENCY: 'jpy',
};

interface OrderView {
  status: string;
  shipment_status: string | null;
  payments: Array<{ provider_event_id: string; amount: number }>;
}

it('plays Stripe and Standard Webhooks against npm start: one payment and one shipment per order', async () => {
  const stack = await startStack(false, SETTINGS);
  const env = stack.env;
  const baseUrl = `http://127.0.0.1:${env.PORT}`;
  const warehouseUrl = `http://127.0.0.1:${env.WAREHOUSE_SIMULATOR_PORT}`;

  // The demo, as the README runs it, once per provider.
  for (const provider of ['stripe', 'standard']) {
    const demo = await run(
      process.execPath,
      ['--import', 'tsx', 'dev/demo.ts', '--provider', provider],
      env,
    );
    expect([demo.code, demo.output]).toEqual([0, expect.stringContaining('payments recorded=1')]);
    expect(demo.output).toMatch(
      /twice at once\s+-> 200 \{"status":"accepted"\} \| 200 \{"status":"accepted"\}/,
    );
    expect(demo.output).toMatch(/\(late, out of order\)\s+-> 200 \{"status":"ignored"\}/);
    expect(demo.output).toMatch(
      /redelivered 2 s later, signed afresh\s+-> 200 \{"status":"accepted"\}/,
    );
    expect(demo.output).toMatch(/replay of a delivery signed 10 minutes ago\s+-> 401/);
    expect(demo.output).toMatch(/forged signature\s+-> 401 \{"error":"invalid signature"\}/);
    expect(demo.output).toMatch(/in USD \(kept as unmatched\)\s+-> 200 \{"status":"unmatched"\}/);
    const [refunded, disputed] =
      provider === 'stripe'
        ? ['charge.refunded', 'charge.dispute.created']
        : ['payment.refunded', 'payment.disputed'];
    expect(demo.output).toMatch(
      new RegExp(`${refunded} of 1000 \\(partial\\)\\s+-> 200 \\{"status":"accepted"\\}`),
    );
    expect(demo.output).toMatch(new RegExp(`${disputed}\\s+-> 200 \\{"status":"accepted"\\}`));
    expect(demo.output).toMatch(/status=paid, shipment_status=requested, payments recorded=1/);
    expect(demo.output).toMatch(/Warehouse simulator: 1 shipment request\(s\)/);
  }

  // A retry storm of our own on top: per provider, an order paid by one event delivered ten
  // times at once, its other events before and after it, and redeliveries on a short backoff.
  const config = loadConfig({ ...env, NODE_ENV: 'development' });
  const orderIds: Record<string, number> = {};
  const eventIds: Record<string, string> = {};
  for (const name of ['stripe', 'standard'] as ProviderName[]) {
    const player = providerPlayer(name, baseUrl, config);
    const created = await fetch(new URL('/api/v1/orders', baseUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': `e2e-${name}` },
      body: JSON.stringify({ user_id: 1, customer_email: 'e2e@example.com', total_amount: 5400 }),
    });
    const orderId = ((await created.json()) as { id: number }).id;
    const payment = player.payment(orderId, 5400);
    const [createdType, relatedType] =
      name === 'stripe'
        ? ['payment_intent.created', 'charge.succeeded']
        : ['payment.created', 'payment.captured'];
    const statuses: number[] = [];
    const deliver = async (event = payment) => statuses.push((await player.deliver(event)).status);
    await deliver(player.other(relatedType, orderId, 5400));
    await Promise.all(Array.from({ length: 10 }, () => deliver()));
    await deliver(player.other(createdType, orderId, 5400));
    for (const waitMs of [200, 400, 800]) {
      await new Promise((resolve) => setTimeout(resolve, waitMs));
      await deliver();
    }
    expect(statuses).toEqual(Array<number>(15).fill(200));
    orderIds[name] = orderId;
    eventIds[name] = `${name}~${payment.id}`;
  }

  for (const name of ['stripe', 'standard']) {
    const orderId = orderIds[name]!;
    await eventually(
      async () => {
        const response = await fetch(new URL(`/api/v1/orders/${orderId}`, baseUrl));
        const order = (await response.json()) as OrderView;
        expect(order.shipment_status).toBe('requested');
      },
      { timeoutMs: 30_000 },
    );
  }
  // Let any second execution that could exist run to its end before counting.
  await new Promise((resolve) => setTimeout(resolve, 2000));
  const shipments = (
    (await (await fetch(new URL('/_simulator/requests', warehouseUrl))).json()) as {
      shipments: Array<{ order_id: number }>;
    }
  ).shipments;
  for (const name of ['stripe', 'standard']) {
    const orderId = orderIds[name]!;
    const order = (await (
      await fetch(new URL(`/api/v1/orders/${orderId}`, baseUrl))
    ).json()) as OrderView;
    expect([order.status, order.payments]).toEqual([
      'paid',
      [expect.objectContaining({ provider_event_id: eventIds[name], amount: 5400 })],
    ]);
    expect(shipments.filter((s) => s.order_id === orderId)).toHaveLength(1);
  }

  // A Stripe payment whose order reference is not one of ours: kept as unmatched, then attached
  // by an operator (twice, as after a crash): it flows as one normal payment of that order.
  const stripe = providerPlayer('stripe', baseUrl, config);
  const created = await fetch(new URL('/api/v1/orders', baseUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'idempotency-key': 'e2e-unmatched' },
    body: JSON.stringify({ user_id: 1, customer_email: 'e2e@example.com', total_amount: 5400 }),
  });
  const orderId = ((await created.json()) as { id: number }).id;
  const foreign = stripe.payment(orderId, 5400);
  const body = foreign.body.replace(`"order_id":"${orderId}"`, `"order_id":"ORD-${orderId}"`);
  const kept = await stripe.deliver({ ...foreign, body });
  expect([kept.status, kept.text]).toEqual([200, '{"status":"unmatched"}']);
  const ops = (...args: string[]) =>
    run(process.execPath, ['--import', 'tsx', 'src/cli/ops.ts', 'unmatched', ...args], env);
  const listed = await ops('list');
  const entry = new RegExp(`^(\\d+) +foreign_order_ref +stripe +stripe~${foreign.id}`, 'm').exec(
    listed.output,
  );
  expect(entry).not.toBeNull();
  for (let i = 0; i < 2; i++) {
    const attached = await ops('attach', entry![1]!, '--order', String(orderId));
    expect([attached.code, attached.output]).toEqual([
      0,
      expect.stringContaining(`payment-unmatched~${entry![1]!}`),
    ]);
  }
  await eventually(
    async () => {
      const order = (await (
        await fetch(new URL(`/api/v1/orders/${orderId}`, baseUrl))
      ).json()) as OrderView;
      expect([order.status, order.shipment_status, order.payments]).toEqual([
        'paid',
        'requested',
        [expect.objectContaining({ provider_event_id: `unmatched~${entry![1]!}`, amount: 5400 })],
      ]);
    },
    { timeoutMs: 30_000 },
  );
  const attachedShipments = (
    (await (await fetch(new URL('/_simulator/requests', warehouseUrl))).json()) as {
      shipments: Array<{ order_id: number }>;
    }
  ).shipments.filter((s) => s.order_id === orderId);
  expect(attachedShipments).toHaveLength(1);

  stack.child.kill('SIGINT');
  expect(await stack.exited).toBe(0);
}, 300_000);
