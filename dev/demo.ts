import { randomBytes } from 'node:crypto';
import { loadConfig } from '../src/config';
import { localHttpUrl } from '../src/net/addresses';
import { signBody } from '../src/http/signature';
import { PAYMENT_WEBHOOK_PATH } from '../src/http/routes/payment-webhook';
import { paymentWorkflowId } from '../src/shared/constants';

/**
 * `npm run demo`: plays a payment provider against the stack that `npm start` runs. Creates an
 * order, delivers its payment webhook twice (a duplicate, as providers do), an event we ignore
 * and a forged one, then shows that one payment and one shipment came out of it.
 */
const config = loadConfig();
const baseUrl = process.env.DEMO_BASE_URL ?? localHttpUrl(config.HOST, config.PORT);
// Without ORDERS_API_KEYS, `npm start` on loopback serves the orders API without a key; with
// keys, the demo needs one with orders:write and orders:read.
const apiKey = process.env.DEMO_API_KEY;
const apiAuth: Record<string, string> = apiKey ? { authorization: `Bearer ${apiKey}` } : {};
const uiBase =
  process.env.DEMO_UI_URL ??
  config.TEMPORAL_UI_URL?.replace(/\/+$/, '') ??
  `http://localhost:${config.TEMPORAL_UI_PORT}`;

async function main(): Promise<void> {
  const suffix = randomBytes(4).toString('hex');

  const orderResponse = await post(
    '/api/v1/orders',
    { user_id: 1, customer_email: 'buyer@example.com', total_amount: 5400 },
    { 'idempotency-key': `demo-order-${suffix}`, ...apiAuth },
  );
  if (orderResponse.status === 401 || orderResponse.status === 403)
    throw new Error(
      `the orders API wants a key (${orderResponse.status} ${orderResponse.text}): set DEMO_API_KEY to a key of ORDERS_API_KEYS with orders:write+orders:read`,
    );
  if (orderResponse.status !== 201)
    throw new Error(`could not create an order: ${orderResponse.status} ${orderResponse.text}`);
  const order = JSON.parse(orderResponse.text) as { id: number };
  console.log(`Created order ${order.id} (amount 5400).\n`);

  const eventId = `evt_demo_${suffix}`;
  const payment = { id: eventId, event: 'payment.succeeded', order_id: order.id, amount: 5400 };
  const deliveries: Array<[string, () => Promise<Reply>]> = [
    ['payment.succeeded', () => sendWebhook(payment)],
    ['same event again (provider retry)', () => sendWebhook(payment)],
    [
      'payment.refunded (not handled)',
      () => sendWebhook({ ...payment, id: `${eventId}_r`, event: 'payment.refunded' }),
    ],
    ['forged signature', () => sendWebhook(payment, 'f'.repeat(64))],
  ];
  console.log('Webhook deliveries:');
  for (const [label, send] of deliveries) {
    const reply = await send();
    console.log(`  ${label.padEnd(36)} -> ${reply.status} ${reply.text}`);
  }

  const final = await waitForShipment(order.id);
  console.log(
    `\nOrder ${order.id}: status=${final.status}, shipment_status=${final.shipment_status}, payments recorded=${final.payments.length}`,
  );
  const warehouse = await warehouseCalls(order.id);
  if (warehouse !== undefined)
    console.log(`Warehouse simulator: ${warehouse} shipment request(s) for order ${order.id}`);
  console.log(
    `\nSee the workflow in the Temporal Web UI:\n  ${uiBase}/namespaces/${config.TEMPORAL_NAMESPACE}/workflows/${paymentWorkflowId(eventId)}`,
  );
}

interface Reply {
  status: number;
  text: string;
}

async function post(
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Reply> {
  const response = await fetch(new URL(path, baseUrl), {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
  return { status: response.status, text: await response.text() };
}

async function sendWebhook(payload: unknown, forcedSignature?: string): Promise<Reply> {
  const raw = JSON.stringify(payload);
  const response = await fetch(new URL(PAYMENT_WEBHOOK_PATH, baseUrl), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'x-payment-signature': forcedSignature ?? signBody(raw, config.PAYMENT_WEBHOOK_SECRET),
    },
    body: raw,
  });
  return { status: response.status, text: await response.text() };
}

interface OrderView {
  status: string;
  shipment_status: string | null;
  payments: unknown[];
}

async function waitForShipment(orderId: number): Promise<OrderView> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const response = await fetch(new URL(`/api/v1/orders/${orderId}`, baseUrl), {
      headers: apiAuth,
    });
    const view = (await response.json()) as OrderView;
    if (view.shipment_status !== null || Date.now() > deadline) return view;
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function warehouseCalls(orderId: number): Promise<number | undefined> {
  const url = config.WAREHOUSE_API_URL ?? `http://127.0.0.1:${config.WAREHOUSE_SIMULATOR_PORT}`;
  try {
    const response = await fetch(new URL('/_simulator/requests', url));
    if (!response.ok) return undefined;
    const body = (await response.json()) as { shipments: Array<{ order_id: number }> };
    return body.shipments.filter((s) => s.order_id === orderId).length;
  } catch {
    return undefined;
  }
}

main().catch((err: unknown) => {
  const message = err instanceof Error ? err.message : String(err);
  console.error(`demo failed: ${message}\nIs the stack running? Start it with: npm start`);
  process.exit(1);
});
